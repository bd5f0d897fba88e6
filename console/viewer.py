"""Who is looking: an account (signed in with one of its access keys) or an operator (a Django
staff user), and the scoping that follows. An account sees only its own resources; an operator
sees every account's, and the nodes.

The session keeps only the access key id: every request resolves it again, as the API resolves
a signature's key, so a deactivated key signs its console sessions out too."""

import hmac
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps

from django.conf import settings
from django.contrib import auth
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.csrf import csrf_protect

from accounts.accesskeys import resolve_access_key
from protocol.context import RequestContext

SESSION_KEY = "console_access_key_id"


@dataclass(frozen=True)
class Viewer:
    # None for an operator, who sees every account.
    account_id: str | None
    # Who acts, as the API's RequestContext names the caller: an access key id, or the operator.
    principal: str

    @property
    def is_operator(self) -> bool:
        return self.account_id is None

    def visible(self, rows: QuerySet) -> QuerySet:
        """The rows of an account-owned model this viewer may see."""
        return rows if self.is_operator else rows.filter(account_id=self.account_id)

    def context_for(self, resource: Model) -> RequestContext:
        """The context the API's services take, in the resource's own account and region: an
        action from the console is the same call a signed request would make."""
        return RequestContext(
            account_id=resource.account_id, region=resource.region, access_key_id=self.principal
        )

    def own_context(self) -> RequestContext:
        """Where the console creates: the viewer's own account, in the stack's region, as a
        request signed with the viewer's key would. An operator has no account to create in."""
        if self.is_operator:
            raise Http404("An operator has no account to create resources in.")
        return RequestContext(
            account_id=self.account_id, region=settings.SAGEPORT_REGION, access_key_id=self.principal
        )


def viewer_of(request: HttpRequest) -> Viewer | None:
    if request.user.is_authenticated and request.user.is_staff:
        return Viewer(account_id=None, principal=f"console-operator:{request.user.get_username()}")
    key_id = request.session.get(SESSION_KEY)
    if not key_id:
        return None
    resolved = resolve_access_key(key_id)
    if resolved is None:  # deactivated or deleted since sign-in
        request.session.flush()
        return None
    return Viewer(account_id=resolved[1], principal=key_id)


def sign_in_with_key(request: HttpRequest, access_key_id: str, secret: str) -> bool:
    resolved = resolve_access_key(access_key_id) if access_key_id else None
    if resolved is None or not hmac.compare_digest(resolved[0].encode(), secret.encode()):
        return False
    auth.logout(request)  # a new session (no fixation), and no operator left signed in
    request.session[SESSION_KEY] = access_key_id
    return True


def sign_in_operator(request: HttpRequest, username: str, password: str) -> bool:
    user = auth.authenticate(request, username=username, password=password)
    if user is None or not user.is_staff:
        return False
    auth.login(request, user)  # rotates the session key
    return True


def sign_out(request: HttpRequest) -> None:
    auth.logout(request)  # flushes the whole session, the access key id included


def console_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page of the console: signed-in viewers only (others go to the sign-in page), CSRF
    checked on every POST, the viewer passed as the second argument."""

    @csrf_protect
    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        viewer = viewer_of(request)
        if viewer is None:
            return redirect(f"{reverse('console:login')}?{urlencode({'next': request.get_full_path()})}")
        request.viewer = viewer
        try:
            return view(request, viewer, *args, **kwargs)
        except Http404:  # the console's own page, saying no more than "not visible to you"
            return render(request, "console/not_found.html", status=404)

    return wrapper


def operator_view(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """A page for operators only; an account is told nothing exists there."""

    @console_view
    @wraps(view)
    def wrapper(request: HttpRequest, viewer: Viewer, *args, **kwargs) -> HttpResponse:
        if not viewer.is_operator:
            raise Http404("No such page.")
        return view(request, viewer, *args, **kwargs)

    return wrapper
