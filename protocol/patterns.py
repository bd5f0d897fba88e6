"""botocore's `pattern` constraints, compiled for Python.

The models carry Java regular expressions (the services are written in Java). Python's `re`
reads most of them unchanged; this module rewrites the constructs it cannot read:
`\\p{..}` classes, `\\z`, UTF-16 surrogate pairs, a quantified `$`, and `-` after a class
shorthand inside `[...]`. The real service applies patterns as full matches."""

import re
import sys
import unicodedata
from functools import cache, lru_cache

# POSIX classes in Java are ASCII-only unless UNICODE_CHARACTER_CLASS is set (it is not).
_POSIX_CLASSES = {
    "Lower": "a-z",
    "Upper": "A-Z",
    "ASCII": r"\x00-\x7f",
    "Alpha": "a-zA-Z",
    "Digit": "0-9",
    "Alnum": "a-zA-Z0-9",
    "Punct": r"!-/:-@\[-`{-~",
    "Graph": r"!-~",
    "Print": r" -~",
    "Blank": r" \t",
    "Space": r" \t\n\x0b\f\r",
    "XDigit": "0-9a-fA-F",
    "Cntrl": r"\x00-\x1f\x7f",
}
_SHORTHAND_CLASSES = "wWdDsS"
_SURROGATE_PAIR = re.compile(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", re.IGNORECASE)
_QUANTIFIER = re.compile(r"\{\d+(,\d*)?\}")


@cache
def compile_pattern(java_pattern: str) -> re.Pattern:
    """Compile a model pattern; match it with `fullmatch`."""
    return re.compile(translate(java_pattern))


def display_pattern(java_pattern: str) -> str:
    """The pattern as AWS quotes it in error messages: anchored at the start."""
    return java_pattern if java_pattern.startswith("^") else "^" + java_pattern


def translate(java_pattern: str) -> str:
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(java_pattern):
        char = java_pattern[i]
        if char == "\\":
            token, i = _translate_escape(java_pattern, i, in_class)
            out.append(token)
        elif char == "[" and not in_class:
            in_class = True
            # A `]` right after `[` or `[^` is a literal in both dialects: copy it with the opener.
            opener = re.match(r"\[\^?\]?", java_pattern[i:]).group()
            out.append(opener)
            i += len(opener)
        elif char == "]" and in_class:
            in_class = False
            out.append(char)
            i += 1
        elif char == "$" and not in_class and _QUANTIFIER.match(java_pattern, i + 1):
            # Java accepts a quantified end anchor (`${1,256}`); it means the same as `$`.
            out.append("$")
            i = _QUANTIFIER.match(java_pattern, i + 1).end()
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _translate_escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """Translate the escape starting at pattern[i] (a backslash); return it and the next index."""
    letter = pattern[i + 1 : i + 2]
    if letter in ("p", "P") and pattern[i + 2 : i + 3] == "{":
        end = pattern.index("}", i)
        return _property_class(pattern[i + 3 : end], negated=letter == "P", in_class=in_class), end + 1
    if letter == "u":
        pair = _SURROGATE_PAIR.match(pattern, i)
        if pair:
            high, low = (int(group, 16) for group in pair.groups())
            code_point = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            return f"\\U{code_point:08x}", pair.end()
    if letter == "z":
        return r"\Z", i + 2
    if in_class and letter in _SHORTHAND_CLASSES and pattern[i + 2 : i + 3] == "-":
        # Java reads `[\w-_]` as `\w`, `-`, `_`; Python rejects the range: escape the dash.
        return f"\\{letter}\\-", i + 3
    return pattern[i : i + 2], i + 2


def _property_class(name: str, *, negated: bool, in_class: bool) -> str:
    members = _POSIX_CLASSES.get(name) or _unicode_category(name)
    if in_class:
        if negated:
            raise ValueError(f"cannot translate a negated property \\P{{{name}}} inside a class")
        return members
    return f"[{'^' if negated else ''}{members}]"


def _unicode_category(name: str) -> str:
    category = name.removeprefix("Is")
    if category not in _category_ranges():
        raise ValueError(f"unsupported regular-expression property \\p{{{name}}}")
    return _category_ranges()[category]


@lru_cache(maxsize=1)
def _category_ranges() -> dict[str, str]:
    """Character-class bodies for every Unicode general category (`L`, `Lu`, `N`, ...).

    Built once, on the first pattern that needs one: Python's `re` has no `\\p{..}`."""
    code_points: dict[str, list[int]] = {}
    for code_point in range(sys.maxunicode + 1):
        category = unicodedata.category(chr(code_point))
        code_points.setdefault(category, []).append(code_point)
        code_points.setdefault(category[0], []).append(code_point)
    return {category: _ranges(points) for category, points in code_points.items()}


def _ranges(sorted_points: list[int]) -> str:
    parts = []
    start = previous = sorted_points[0]
    for point in sorted_points[1:] + [-1]:
        if point == previous + 1:
            previous = point
            continue
        parts.append(f"\\U{start:08x}" if start == previous else f"\\U{start:08x}-\\U{previous:08x}")
        start = previous = point
    return "".join(parts)
