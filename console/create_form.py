"""A create form: its fields, how their values become the operation's request, and where the
operation's errors go. The console validates nothing itself: the request goes to the API's
operation (console/actions.perform) and its errors are placed beside the fields they name
(console/field_errors). Only what a form field cannot say as the API's JSON is read here: a
number, and KEY=VALUE lines."""

from collections.abc import Callable
from dataclasses import dataclass, field

from console.field_errors import Target

TEXT, NUMBER, SELECT, PAIRS = "text", "number", "select", "pairs"


@dataclass(frozen=True)
class Field:
    name: str
    label: str
    # The request member the field fills, as a validation error names it.
    path: str
    kind: str = TEXT
    required: bool = True
    default: str = ""
    hint: str = ""
    # How an error quotes the value (field_errors.Target.mention).
    mention: str = ""
    # A select's options: (viewer's RequestContext) -> values.
    choices: Callable | None = None


@dataclass(frozen=True)
class CreateForm:
    title: str
    noun: str  # as in "Created model demo."
    operation: str
    fields: tuple[Field, ...]
    # The form's values (str by field name) -> the operation's request; FormProblem if a value
    # cannot be written in the request at all.
    build: Callable[[dict[str, str]], dict]
    arn_member: str  # the response member naming what was created
    model: type  # the Django model of the created resource
    arn_field: str
    page: str  # the URL name of the resource's page (by pk)
    listing: str  # the URL name of its list
    listing_title: str
    intro: str = ""


class FormProblem(Exception):
    def __init__(self, field_name: str, message: str):
        super().__init__(message)
        self.field_name = field_name
        self.message = message


def values_of(form: CreateForm, data) -> dict[str, str]:
    """The submitted values (or the defaults on a first visit), single lines stripped."""
    values = {}
    for item in form.fields:
        value = data.get(item.name, item.default)
        values[item.name] = value if item.kind == PAIRS else value.strip()
    return values


def targets(form: CreateForm, values: dict[str, str]) -> list[Target]:
    return [Target(item.name, item.path, item.mention, values.get(item.name, "")) for item in form.fields]


def number(text: str) -> int | str:
    """A whole number; a value that is not one goes to the API as it is, which says why it is
    refused (Member must be of type integer)."""
    try:
        return int(text)
    except ValueError:
        return text


def pairs(field_name: str, text: str) -> dict[str, str]:
    """KEY=VALUE lines (blank lines skipped; the value may hold '=') as a map."""
    entries: dict[str, str] = {}
    for number_, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, equals, value = line.partition("=")
        key = key.strip()
        if not equals or not key:
            raise FormProblem(field_name, f"Line {number_} is not KEY=VALUE: {line.strip()[:80]}")
        if key in entries:
            raise FormProblem(field_name, f"{key} is given twice (line {number_}).")
        entries[key] = value.strip()
    return entries


def optional(member: str, value) -> dict:
    """`{member: value}`, or nothing for an empty value: an empty optional field sends no member."""
    return {member: value} if value not in ("", None, {}, []) else {}


@dataclass
class Rendered:
    """One field as the template shows it."""

    field: Field
    value: str
    errors: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
