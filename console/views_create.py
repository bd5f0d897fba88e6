"""The create forms' pages: a form on GET; on POST the operation, run as the signed-in account
(console/actions.perform: the API's validation, request checks and handler), then the new
resource's page, or the form again with the values kept and each error beside its field."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from console import create_specs, field_errors
from console.actions import perform
from console.addresses import address
from console.create_form import CreateForm, FormProblem, Rendered, targets, values_of
from console.viewer import Viewer, console_view
from protocol.context import RequestContext


def _create_page(request: HttpRequest, viewer: Viewer, form: CreateForm) -> HttpResponse:
    ctx = viewer.own_context()
    values = values_of(form, request.POST if request.method == "POST" else request.GET)
    placed = field_errors.Placed()
    if request.method == "POST":
        try:
            params = form.build(values)
        except FormProblem as problem:
            placed.by_field[problem.field_name] = [problem.message]
        else:
            outcome = perform(ctx, form.operation, params)
            if outcome.ok:
                return _created(request, viewer, form, values["name"], outcome.response[form.arn_member])
            placed = field_errors.place(outcome.message, targets(form, values))
            placed.general = [f"{outcome.code}: {message}" for message in placed.general]
    context = {
        "form": form,
        "rows": _rows(form, ctx, values, placed),
        "general": placed.general,
        "has_errors": bool(placed.general or placed.by_field),
    }
    return render(request, "console/create_form.html", context)


def _rows(form: CreateForm, ctx: RequestContext, values: dict, placed: field_errors.Placed) -> list[Rendered]:
    return [
        Rendered(
            field=item,
            value=values[item.name],
            errors=placed.by_field.get(item.name, []),
            options=list(item.choices(ctx)) if item.choices else [],
        )
        for item in form.fields
    ]


def _created(request: HttpRequest, viewer: Viewer, form: CreateForm, name: str, arn: str) -> HttpResponse:
    messages.success(request, f"Created {form.noun} {name}.")
    row = form.model.objects.filter(**{form.arn_field: arn}).first()
    if row is None:  # deleted by another hand in the meantime
        return redirect(form.listing)
    return redirect(address(viewer, row, form.page))


def _page(form: CreateForm):
    @console_view
    def create(request: HttpRequest, viewer: Viewer) -> HttpResponse:
        return _create_page(request, viewer, form)

    return create


model_create = _page(create_specs.MODEL)
config_create = _page(create_specs.ENDPOINT_CONFIG)
endpoint_create = _page(create_specs.ENDPOINT)
training_job_create = _page(create_specs.TRAINING_JOB)
