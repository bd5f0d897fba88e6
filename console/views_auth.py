"""Signing in and out of the console."""

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_POST

from console.viewer import Viewer, console_view, sign_in_operator, sign_in_with_key, sign_out, viewer_of

REFUSED = "Those credentials are not valid."


@csrf_protect
def login(request: HttpRequest) -> HttpResponse:
    target = _next_page(request)
    if request.method == "GET" and viewer_of(request) is not None:
        return redirect(target)
    error = ""
    if request.method == "POST":
        if _sign_in(request):
            return redirect(target)
        error = REFUSED
    context = {"error": error, "next": target, "access_key_id": request.POST.get("access_key_id", "")}
    return render(request, "console/login.html", context, status=401 if error else 200)


def _sign_in(request: HttpRequest) -> bool:
    form = request.POST
    if form.get("kind") == "operator":
        return sign_in_operator(request, form.get("username", ""), form.get("password", ""))
    return sign_in_with_key(request, form.get("access_key_id", "").strip(), form.get("secret_access_key", ""))


def _next_page(request: HttpRequest) -> str:
    """Where to go after signing in: a page of this site only (never an open redirect)."""
    wanted = request.POST.get("next") or request.GET.get("next") or ""
    safe = url_has_allowed_host_and_scheme(wanted, allowed_hosts={request.get_host()}) and wanted.startswith(
        "/"
    )
    return wanted if safe else "/console/"


@csrf_protect
@require_POST
def logout(request: HttpRequest) -> HttpResponse:
    sign_out(request)
    return redirect("console:login")


@console_view
def not_found(request: HttpRequest, viewer: Viewer) -> HttpResponse:
    """Any other address under /console/: the console's page, signed in or not (the sign-in
    page first), rather than Django's bare one."""
    raise Http404("No such page.")
