"""Reading a JSON 1.1 request body, with the limits that keep a client's mistake a 400.

Python's json module accepts what no AWS client sends and what later layers cannot handle:
`NaN`/`Infinity` literals, integers too long to convert (4,300+ digits raise ValueError),
nesting deep enough to exhaust the stack, and `\\ud800` escapes that decode to lone surrogates,
which no database or UTF-8 encoder accepts. All of these are refused here, before any work."""

import json
import re

from protocol.errors import SerializationException
from protocol.limits import echo

# Deeper than any SageMaker or CloudWatch Logs input shape nests (the recursive search
# expressions included), far below what would exhaust Python's stack.
MAX_DEPTH = 64
# Longer than any int64, double or epoch timestamp is written; every number is checked.
MAX_NUMBER_CHARS = 64
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_json_object(raw: bytes) -> dict:
    """The body as a dict; SerializationException for anything a valid client cannot send."""
    if not raw:
        return {}
    try:
        body = json.loads(
            raw, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_refuse_constant
        )
    except SerializationException:
        raise
    except RecursionError:
        raise _too_deep() from None
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise SerializationException(f"The request body is not valid JSON: {echo(str(error))}") from None
    if not isinstance(body, dict):
        raise SerializationException("The request body must be a JSON object.")
    _check_structure(body)
    return body


def _parse_int(text: str) -> int:
    _check_number_length(text)
    return int(text)


def _parse_float(text: str) -> float:
    _check_number_length(text)
    return float(text)


def _check_number_length(text: str) -> None:
    if len(text) > MAX_NUMBER_CHARS:
        raise SerializationException(
            f"The request body has a number written with {len(text)} characters; "
            f"at most {MAX_NUMBER_CHARS} are accepted."
        )


def _refuse_constant(name: str) -> float:
    raise SerializationException(
        f"The request body is not valid JSON: {name} is not a JSON value (send it as the string \"{name}\")."
    )


def _check_structure(body: dict) -> None:
    """Depth and string contents, walked without recursion (the depth is what is in question)."""
    pending: list[tuple[object, int]] = [(body, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise _too_deep()
        if isinstance(value, dict):
            for key, item in value.items():
                _check_string(key)
                pending.append((item, depth + 1))
        elif isinstance(value, list):
            pending.extend((item, depth + 1) for item in value)
        elif isinstance(value, str):
            _check_string(value)


def _check_string(value: str) -> None:
    if not value.isascii() and _LONE_SURROGATE.search(value):
        raise SerializationException(
            "The request body is not valid JSON: it escapes a lone UTF-16 surrogate (\\ud800-\\udfff), "
            "which is not a Unicode character."
        )


def _too_deep() -> SerializationException:
    return SerializationException(f"The request body nests JSON deeper than {MAX_DEPTH} levels.")


