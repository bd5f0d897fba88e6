"""CloudWatch Logs filter patterns for unstructured events: terms and quoted phrases.

    ERROR                  events containing ERROR (case-sensitive)
    ERROR Exception        events containing both
    "Exception in thread"  events containing the exact phrase
    ?ERROR ?WARN           events containing at least one of the ?-terms
    ERROR -Retrying        events containing ERROR but not Retrying

JSON (`{ $.level = ... }`), space-delimited (`[ip, user, ...]`) and regex (`%...%`) patterns are
refused with InvalidParameterException rather than matched wrongly."""
import re
from collections.abc import Callable
from dataclasses import dataclass

from protocol.errors import InvalidParameterException

# One term: an optional ? or - and either a quoted phrase (with \" and \\ escapes) or a bare word.
_TERM = re.compile(r'\s*(?P<sign>[?-]?)(?:"(?P<phrase>(?:[^"\\]|\\.)*)"|(?P<word>[^\s"]+))\s*')
_ESCAPE = re.compile(r"\\(.)")


@dataclass(frozen=True)
class _Terms:
    required: tuple[str, ...]
    any_of: tuple[str, ...]
    excluded: tuple[str, ...]

    def matches(self, message: str) -> bool:
        return (
            all(term in message for term in self.required)
            and (not self.any_of or any(term in message for term in self.any_of))
            and not any(term in message for term in self.excluded)
        )


def compile_pattern(pattern: str | None) -> Callable[[str], bool]:
    """A predicate on event messages; an empty pattern matches every event."""
    text = (pattern or "").strip()
    if text[:1] in ("{", "[", "%"):
        raise InvalidParameterException(
            f"Invalid filter pattern '{pattern}': Sageport matches terms and quoted phrases only; "
            "JSON, space-delimited and regular-expression patterns are not supported."
        )
    groups: dict[str, list[str]] = {"": [], "?": [], "-": []}
    offset = 0
    while offset < len(text):
        match = _TERM.match(text, offset)
        if match is None:
            raise InvalidParameterException(f"Invalid filter pattern '{pattern}': unbalanced quote.")
        term = _ESCAPE.sub(r"\1", match["phrase"]) if match["phrase"] is not None else match["word"]
        groups[match["sign"]].append(term)
        offset = match.end()
    return _Terms(tuple(groups[""]), tuple(groups["?"]), tuple(groups["-"])).matches
