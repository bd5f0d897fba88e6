"""Delete, as every resource page offers it: the API's own Delete operation, run as the signed-in
viewer in the resource's account (an operator acts in the owner's, as for every other action).
A refusal (a group that still holds packages, a pipeline with a running execution) is the API's
error shown on the resource's page, nothing changed; success goes to the list with a note."""

from django.contrib import messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from console.actions import perform
from console.addresses import address
from console.viewer import Viewer


def delete(
    request: HttpRequest,
    viewer: Viewer,
    row: Model,
    call: tuple[str, dict],
    pages: tuple[str, str],
    done: str,
) -> HttpResponse:
    """`call`: (the Delete operation, its parameters); `pages`: (the URL names of the row's page
    and of the list)."""
    operation, params = call
    page, listing = pages
    outcome = perform(viewer.context_for(row), operation, params)
    if not outcome.ok:
        messages.error(request, outcome.error)
        return redirect(address(viewer, row, page))
    messages.success(request, done)
    return redirect(listing)
