"""Label selectors, as `kubectl -l` and the `labelSelector` query parameter write them:
`k=v`, `k==v`, `k!=v`, `k` (exists), `!k` (absent), `k in (a,b)`, `k notin (a,b)`, joined by commas
(all must hold)."""

import re
from collections.abc import Callable

Labels = dict[str, str]
Requirement = Callable[[Labels], bool]

_KEY = r"[A-Za-z0-9][-A-Za-z0-9_./]*"
_VALUE = r"[-A-Za-z0-9_.]*"
_EQUALITY = re.compile(rf"\s*({_KEY})\s*(==|=|!=)\s*({_VALUE})\s*")
_SET = re.compile(rf"\s*({_KEY})\s+(in|notin)\s+\(\s*({_VALUE}(?:\s*,\s*{_VALUE})*)\s*\)\s*")
_EXISTS = re.compile(rf"\s*(!?)\s*({_KEY})\s*")
_SPLIT = re.compile(r",(?![^()]*\))")  # commas outside parentheses


class InvalidSelector(ValueError):
    pass


def parse_selector(text: str) -> Callable[[Labels], bool]:
    """A predicate over a job's labels; InvalidSelector names the requirement it cannot read."""
    if len(text) > 4096:
        raise InvalidSelector("the label selector is too long")
    requirements = [_requirement(part) for part in _SPLIT.split(text) if part.strip()]
    return lambda labels: all(requirement(labels) for requirement in requirements)


def _requirement(part: str) -> Requirement:
    if match := _EQUALITY.fullmatch(part):
        key, operator, value = match.groups()
        if operator == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _SET.fullmatch(part):
        key, operator, values = match.groups()
        allowed = {value.strip() for value in values.split(",")}
        if operator == "in":
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed
    if match := _EXISTS.fullmatch(part):
        negated, key = match.groups()
        return (lambda labels: key not in labels) if negated else (lambda labels: key in labels)
    raise InvalidSelector(f"unable to parse requirement: {part.strip()[:100]!r}")
