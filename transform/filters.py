"""DataProcessing: InputFilter on each record, JoinSource Input, OutputFilter on what is written.

Developer guide, "Associate Prediction Results with Input Records", and API reference,
DataProcessing: only CSV and JSON (JSON Lines) data; "for CSV data, SageMaker takes each row as a
JSON array and joins the transformed data with the input by appending each transformed row to the
end of the input"; for JSON "SageMaker adds the transformed data to the input JSON object in an
attribute called SageMakerOutput"; "if the input is not a key-value pair object, SageMaker
creates a new JSON file ... the input data is stored under the SageMakerInput key and the results
are stored in SageMakerOutput". The join takes the record as read, before InputFilter (the
guide's CSV example: InputFilter `$[1:]` drops the ID column from what the model sees, and the
joined output still starts with it).

Records are read in the format of TransformInput.ContentType, answers in the format of
TransformOutput.Accept; a joined record takes the input's format. The answer to a payload of
several records has one line per record."""
import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass

from transform.batching import Payload
from transform.errors import ObjectFailed
from transform.jsonpath import JsonPath, compile_path, filter_problem, is_csv, select
from transform.records import Record

JSON_CONTENT_TYPES = ("application/json", "application/jsonlines", "application/x-jsonlines")


class CsvFormat:
    """One RFC 4180 row as a list of strings (the guide: "CSV data should also follow RFC
    format"; "for CSV files, you cannot use embedded newline characters")."""

    def parse(self, text: str) -> list[str]:
        if "\n" in text or "\r" in text:
            raise ObjectFailed("DataProcessing takes one CSV row per record: split CSV with SplitType Line")
        try:
            return next(csv.reader([text]), [])
        except csv.Error as err:
            raise ObjectFailed(f"Unable to parse a record as CSV: {err}") from err

    def dump(self, value) -> str:
        row = io.StringIO()
        csv.writer(row, lineterminator="").writerow(value if isinstance(value, list) else [value])
        return row.getvalue()

    def parse_answer(self, text: str) -> list[str]:
        return self.parse(text)


class JsonFormat:
    def parse(self, text: str):
        try:
            return json.loads(text)
        except ValueError as err:
            raise ObjectFailed(f"Unable to parse a record as JSON: {err}") from err

    def dump(self, value) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    def parse_answer(self, text: str):
        """An answer that is not JSON (a bare label) is joined as a string."""
        try:
            return json.loads(text)
        except ValueError:
            return text


def data_format(content_type: str | None) -> CsvFormat | JsonFormat:
    if is_csv(content_type):
        return CsvFormat()
    if (content_type or "").split(";", 1)[0].strip().lower() in JSON_CONTENT_TYPES:
        return JsonFormat()
    raise ObjectFailed(
        f'DataProcessing needs CSV or JSON data ("text/csv", "application/json" or '
        f'"application/jsonlines"), not "{content_type or ""}"'
    )


@dataclass(frozen=True)
class DataProcessing:
    input_filter: JsonPath
    output_filter: JsonPath
    join_input: bool
    content_type: str | None
    accept: str | None

    @classmethod
    def from_request(cls, data_processing: dict | None, content_type: str | None, accept: str | None):
        """The job's DataProcessing as CreateTransformJob received it (absent members take the
        API's defaults `$`, `None`, `$`); a path outside SageMaker's subset fails here."""
        data_processing = data_processing or {}
        return cls(
            input_filter=compile_path(data_processing.get("InputFilter")),
            output_filter=compile_path(data_processing.get("OutputFilter")),
            join_input=data_processing.get("JoinSource") == "Input",
            content_type=content_type,
            accept=accept,
        )

    @property
    def passes_through(self) -> bool:
        """All defaults: answers are written as returned and nothing reads the records."""
        return self.input_filter.is_root and self.output_filter.is_root and not self.join_input

    @property
    def record_filter(self) -> Callable[[Record], Record] | None:
        """What turns a record as read into the record as sent (batching's `prepare`); None when
        the data passes through, so that an unsplit object may be streamed unread."""
        return None if self.passes_through else self._filtered

    def _filtered(self, record: Record) -> Record:
        """The record with InputFilter applied, its line ending kept."""
        if self.input_filter.is_root:
            return record
        text, ending = _text_and_ending(record.framed)
        formatted = data_format(self.content_type)
        sent = (formatted.dump(select(self.input_filter, formatted.parse(text))) + ending).encode()
        return Record(sent, sent)

    @property
    def answers_pass_through(self) -> bool:
        """No OutputFilter and no JoinSource: answers are written as returned, unread."""
        return not self.join_input and self.output_filter.is_root

    def output(self, payload: Payload, answer: bytes) -> bytes:
        """What is written for one payload's answer: the answer itself, or one joined and
        filtered record per input record, a newline between them."""
        if self.answers_pass_through:
            return answer
        answers = _answers_per_record(payload, answer)
        if self.join_input:
            formatted = data_format(self.content_type)
            pairs = zip(payload.records, answers, strict=True)
            joined = [self._joined(formatted, record, text) for record, text in pairs]
        else:
            formatted = data_format(self.accept)
            joined = [formatted.parse_answer(text) for text in answers]
        return "\n".join(formatted.dump(select(self.output_filter, value)) for value in joined).encode()

    def _joined(self, formatted: CsvFormat | JsonFormat, record: Record, answer: str):
        source = formatted.parse(_text_and_ending(record.framed)[0])
        result = formatted.parse_answer(answer)
        if isinstance(formatted, CsvFormat):
            return source + result
        if isinstance(source, dict):
            return {**source, "SageMakerOutput": result}
        return {"SageMakerInput": source, "SageMakerOutput": result}


def _text_and_ending(framed: bytes) -> tuple[str, str]:
    try:
        text = framed.decode()
    except UnicodeDecodeError as err:
        raise ObjectFailed(f"DataProcessing needs UTF-8 text: {err}") from err
    stripped = text.rstrip("\r\n")
    return stripped, text[len(stripped) :]


def _answers_per_record(payload: Payload, answer: bytes) -> list[str]:
    text, _ = _text_and_ending(answer)
    if len(payload.records) == 1:
        return [text]
    lines = text.split("\n")
    if len(lines) != len(payload.records):
        raise ObjectFailed(
            f"The model answered {len(lines)} lines for {len(payload.records)} records; "
            "DataProcessing needs one line per record"
        )
    return [line.rstrip("\r") for line in lines]


def data_processing_problems(request: dict) -> list[str]:
    """What CreateTransformJob refuses in DataProcessing, as ValidationException messages:
    InputFilter's characters against TransformInput.ContentType, OutputFilter's against
    TransformOutput.Accept (see `jsonpath.filter_problem`). The grammar is SageMaker's to check
    when the job reads an object (`DataProcessing.from_request`)."""
    data_processing = request.get("DataProcessing") or {}
    content_type = request["TransformInput"].get("ContentType")
    accept = request["TransformOutput"].get("Accept")
    problems = (
        filter_problem("InputFilter", data_processing.get("InputFilter"), content_type),
        filter_problem("OutputFilter", data_processing.get("OutputFilter"), accept),
    )
    return [problem for problem in problems if problem]
