"""DataProcessing: InputFilter, JoinSource Input and OutputFilter on CSV and JSON records.

Developer guide, "Associate Prediction Results with Input Records" (its examples are used
below), and API reference, DataProcessing.JoinSource."""
import io
import json

import pytest

from transform.batching import Payload, object_payloads
from transform.errors import ObjectFailed
from transform.filters import DataProcessing, data_processing_problems
from transform.records import Record


def processing(content_type: str, accept: str | None = None, **members) -> DataProcessing:
    return DataProcessing.from_request(members, content_type, accept or content_type)


def payload_of(*lines: bytes) -> Payload:
    records = tuple(Record(line, line) for line in lines)
    return Payload(0, records, b"".join(lines))


def test_the_default_writes_the_answer_untouched():
    """"By default, the DataProcessing parameter doesn't join inference results with input. It
    outputs only the inference results" - byte for byte, whatever its format."""
    default = DataProcessing.from_request(None, "application/x-image", "application/x-protobuf")
    record = Record(b"\x89PNG", b"\x89PNG")
    assert default.record_filter is None
    assert default.output(Payload(0, (record,), b"\x89PNG"), b"\x00\xffraw") == b"\x00\xffraw"
    explicit = processing("text/csv", InputFilter="$", JoinSource="None", OutputFilter="$")
    assert explicit.output(payload_of(b"1,2\n", b"3,4\n"), b"0.1\n0.2\n") == b"0.1\n0.2\n"


def test_csv_join_appends_the_answer_to_the_input_row():
    """"For a CSV file, for example, if the record is [1,2,3], and the label result is [1], then
    the output file would contain [1,2,3,1]"."""
    joined = processing("text/csv", JoinSource="Input")
    assert joined.output(payload_of(b"1,2,3\n"), b"1\n") == b"1,2,3,1"


def test_csv_id_column_is_kept_out_of_the_model_and_joined_back():
    """The guide's "Output an ID Column with Results and Exclude the ID Column from the Input
    (CSV)": InputFilter "$[1:]", JoinSource "Input", OutputFilter "$"."""
    dp = processing("text/csv", InputFilter="$[1:]", JoinSource="Input", OutputFilter="$")
    data = b"id1,5.1,3.5\nid2,4.9,3.0\n"
    [payload] = object_payloads(io.BytesIO(data), "Line", "MultiRecord", 6, dp.record_filter)
    assert payload.body == b"5.1,3.5\n4.9,3.0\n"
    assert dp.output(payload, b"setosa\nversicolor\n") == b"id1,5.1,3.5,setosa\nid2,4.9,3.0,versicolor"


def test_csv_output_filter_keeps_the_id_and_the_prediction():
    """The filters of aws/sagemaker-xgboost-container issue 410: InputFilter "$[1:]",
    OutputFilter "$[0, -1]"."""
    dp = processing("text/csv", InputFilter="$[1:]", JoinSource="Input", OutputFilter="$[0, -1]")
    assert dp.record_filter(Record(b"7,0.5,0.25\r\n", b"7,0.5,0.25\r\n")).framed == b"0.5,0.25\r\n"
    assert dp.output(payload_of(b"7,0.5,0.25\r\n"), b"0.93") == b"7,0.93"


def test_csv_rows_follow_rfc_4180_quoting():
    """"CSV data should also follow RFC format"."""
    dp = processing("text/csv", InputFilter="$[1]", JoinSource="Input", OutputFilter="$[0,-1]")
    record = Record(b'"Smith, J",7\n', b'"Smith, J",7\n')
    assert dp.record_filter(record).framed == b"7\n"
    assert dp.output(payload_of(b'"Smith, J",7\n'), b"yes\n") == b'"Smith, J",yes'


def test_json_join_adds_sagemaker_output_to_the_input_object():
    """"if the input is a JSON file that contains the key-value pair {"key":1}, the data
    transform result might be {"label":1}" and the output holds both under SageMakerOutput."""
    dp = processing("application/jsonlines", JoinSource="Input")
    written = dp.output(payload_of(b'{"key":1}\n'), b'{"label":1}\n')
    assert json.loads(written) == {"key": 1, "SageMakerOutput": {"label": 1}}


def test_json_join_of_an_input_that_is_not_an_object_nests_both():
    """"If the input isn't a key-value pair object, SageMaker creates a new JSON file ... the
    input data is stored in the SageMakerInput key and the results ... SageMakerOutput"."""
    dp = processing("application/json", JoinSource="Input")
    written = dp.output(payload_of(b"[1, 2, 3]"), b"0.5")
    assert json.loads(written) == {"SageMakerInput": [1, 2, 3], "SageMakerOutput": 0.5}


def test_json_features_in_id_out():
    """The guide's "Output an ID Attribute with Results and Exclude the ID Attribute from the
    Input (JSON)": InputFilter "$.features", OutputFilter "$['id','SageMakerOutput']"."""
    dp = processing(
        "application/jsonlines",
        InputFilter="$.features",
        JoinSource="Input",
        OutputFilter="$['id','SageMakerOutput']",
    )
    data = b'{"id":"a","features":[1,2]}\n{"id":"b","features":[3,4]}\n'
    [payload] = object_payloads(io.BytesIO(data), "Line", "MultiRecord", 6, dp.record_filter)
    assert payload.body == b"[1,2]\n[3,4]\n"
    written = dp.output(payload, b'{"p":0.1}\n{"p":0.9}\n').split(b"\n")
    assert [json.loads(line) for line in written] == [
        {"id": "a", "SageMakerOutput": {"p": 0.1}},
        {"id": "b", "SageMakerOutput": {"p": 0.9}},
    ]


def test_an_answer_that_is_not_json_is_joined_as_a_string():
    dp = processing("application/jsonlines", JoinSource="Input")
    written = dp.output(payload_of(b'{"k":1}'), b"malignant")
    assert json.loads(written) == {"k": 1, "SageMakerOutput": "malignant"}


def test_output_filter_without_join_filters_the_answers():
    dp = processing("application/jsonlines", OutputFilter="$.label")
    assert dp.output(payload_of(b"{}\n", b"{}\n"), b'{"label":1,"p":0.9}\n{"label":0,"p":0.2}') == b"1\n0"


def test_a_multi_record_answer_needs_one_line_per_record_to_join():
    dp = processing("text/csv", JoinSource="Input")
    with pytest.raises(ObjectFailed, match="answered 1 lines for 2 records"):
        dp.output(payload_of(b"1,2\n", b"3,4\n"), b"0.5\n")


def test_an_output_filter_index_outside_the_joined_row_fails_the_object():
    """DataProcessing.OutputFilter: "If you specify indexes that aren't within the dimension size
    of the joined dataset, you get an error"."""
    dp = processing("text/csv", JoinSource="Input", OutputFilter="$[5]")
    with pytest.raises(ObjectFailed, match="outside the 3 elements"):
        dp.output(payload_of(b"1,2\n"), b"0")


def test_filters_need_csv_or_json_data():
    """"You can use input files in JSON and CSV format only"."""
    dp = processing("application/x-recordio-protobuf", InputFilter="$[1:]")
    with pytest.raises(ObjectFailed, match='needs CSV or JSON data .* not "application/x-recordio-protobuf"'):
        dp.record_filter(Record(b"\x0a\x0b", b"\x0a\x0b"))


def test_an_input_filter_on_an_unsplit_object_is_applied_even_without_a_payload_limit():
    """MaxPayloadInMB 0 streams an unsplit object only when nothing has to read it first."""
    dp = processing("application/json", InputFilter="$.features")
    [payload] = object_payloads(io.BytesIO(b'{"features":[1,2],"id":7}'), "None", None, 0, dp.record_filter)
    assert payload.body == b"[1,2]"


def test_a_join_on_an_unsplit_object_reads_it_instead_of_streaming_it():
    dp = processing("application/json", JoinSource="Input")
    [payload] = object_payloads(io.BytesIO(b'{"id":7}'), "None", None, 0, dp.record_filter)
    assert json.loads(dp.output(payload, b"1")) == {"id": 7, "SageMakerOutput": 1}


def test_csv_data_processing_needs_one_row_per_record():
    """"For CSV files, you cannot use embedded newline characters"; rows are records only when
    SplitType is Line."""
    dp = processing("text/csv", JoinSource="Input")
    with pytest.raises(ObjectFailed, match="one CSV row per record"):
        dp.output(Payload(0, (Record(b"1,2\n3,4\n", b"1,2\n3,4\n"),), b""), b"0\n1\n")


def test_a_record_that_is_not_json_fails_the_object():
    dp = processing("application/json", InputFilter="$.features")
    with pytest.raises(ObjectFailed, match="Unable to parse a record as JSON"):
        dp.record_filter(Record(b"not json\n", b"not json\n"))


def test_an_invalid_path_fails_when_the_job_reads_its_data_processing():
    with pytest.raises(ObjectFailed, match="Invalid JsonPath: \\$\\[0:2,246:\\]"):
        DataProcessing.from_request({"OutputFilter": "$[0:2,246:]"}, "text/csv", "text/csv")


def test_create_transform_job_problems_name_each_filter_against_its_content_type():
    """InputFilter is checked against TransformInput.ContentType, OutputFilter against
    TransformOutput.Accept (aws/aws-sdk issue 184 names the Accept type for an OutputFilter)."""
    request = {
        "TransformInput": {"ContentType": "text/csv"},
        "TransformOutput": {"Accept": "application/jsonlines"},
        "DataProcessing": {"InputFilter": "$.features", "OutputFilter": "$['account_id']"},
    }
    problems = data_processing_problems(request)
    assert [problem.split(". ")[0] for problem in problems] == [
        'Invalid InputFilter: "$.features"',
        "Invalid OutputFilter: \"$['account_id']\"",
    ]
    assert data_processing_problems({"TransformInput": {}, "TransformOutput": {}}) == []
