"""Where an API error belongs on a create form: beside the field it names, or above the form.

A ValidationException from the botocore shape lists its problems as AWS words them ("Value 'x'
at 'primaryContainer.modelDataUrl' failed to satisfy constraint: ..."); each goes beside the
field filling that member. Other errors (a service's rule, the tenancy rule, a name taken) are
one message: it goes beside the first field it names, by member path ("OutputDataConfig.
S3OutputPath") or by quoting the field's value (an S3 URI, a role ARN, a resource's ARN). An
error naming no field is shown above the form."""

import re
from dataclasses import dataclass, field

_VALIDATION_HEAD = re.compile(r"^\d+ validation errors? detected: ")
# One shape problem; the value is AWS's quoted echo (it may hold quotes: the shortest one that
# is followed by a member path and the constraint's words).
_PROBLEM = re.compile(r"Value (?:null|'.*?') at '(?P<path>[^']+)' failed to satisfy constraint: ")
# A dotted member path as messages write one: `ResourceConfig.InstanceType`,
# `InputDataConfig[0].DataSource.S3DataSource.S3Uri`, `inputDataConfig.1.member.channelName`.
_MEMBER_PATH = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:(?:\[\d+\]|\.\d+\.member)?\.[A-Za-z][A-Za-z0-9]*)+")
_LIST_INDEX = re.compile(r"\[\d+\]|\.\d+\.member")
# Where a quoted value ends: a quote, bracket, comma, semicolon, space, or a sentence's full stop.
_VALUE_END = r"(?=$|[\s\"'),;]|\.(?:\s|$))"


@dataclass(frozen=True)
class Target:
    """A form field as an error may name it."""

    field: str
    # The request member it fills, dotted (any case, list positions allowed): its problems and
    # anything inside it (a map's keys) are its errors.
    path: str
    # How a message quotes the field's value: the value itself (`value`), or an ARN ending in
    # `:<mention>/<value>` (a resource's name). Empty: by its path only.
    mention: str = ""
    value: str = ""


@dataclass
class Placed:
    by_field: dict[str, list[str]] = field(default_factory=dict)
    general: list[str] = field(default_factory=list)

    def add(self, target: Target | None, message: str) -> None:
        if target is None:
            self.general.append(message)
        else:
            self.by_field.setdefault(target.field, []).append(message)


def place(message: str, targets: list[Target]) -> Placed:
    placed = Placed()
    if _VALIDATION_HEAD.match(message):
        for path, problem in shape_problems(message):
            placed.add(_by_path(path, targets), problem)
    else:
        placed.add(first_named(message, targets), message)
    return placed


def shape_problems(message: str) -> list[tuple[str, str]]:
    """(member path, problem) of each problem a validation message lists."""
    found = list(_PROBLEM.finditer(message))
    problems = []
    for match, following in zip(found, [*found[1:], None], strict=True):
        end = following.start() if following else len(message)
        problems.append((match["path"], message[match.start():end].rstrip("; ")))
    return problems


def _normal(path: str) -> str:
    return _LIST_INDEX.sub("", path).lower()


def _by_path(path: str, targets: list[Target]) -> Target | None:
    """The target filling `path` or a member inside it (the longest such path)."""
    wanted = _normal(path)
    inside = [t for t in targets if wanted == _normal(t.path) or wanted.startswith(_normal(t.path) + ".")]
    return max(inside, key=lambda t: len(t.path), default=None)


def first_named(message: str, targets: list[Target]) -> Target | None:
    """The target the message names first, by member path or by quoting its value."""
    named: list[tuple[int, Target]] = []
    for match in _MEMBER_PATH.finditer(message):
        target = _by_path(match.group(), targets)
        if target is not None:
            named.append((match.start(), target))
    for target in targets:
        quoted = _quoted(target)
        if quoted is not None and (match := quoted.search(message)):
            named.append((match.start(), target))
    return min(named, key=lambda found: found[0], default=(0, None))[1]


def _quoted(target: Target) -> re.Pattern | None:
    if not target.mention or not target.value:
        return None
    text = target.value if target.mention == "value" else f":{target.mention}/{target.value}"
    return re.compile(re.escape(text) + _VALUE_END)
