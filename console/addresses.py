"""A resource's console address is its SageMaker name, as the AWS console's is
(`/training-jobs/<TrainingJobName>/`), never a database id.

A name is unique per account, region and kind (the ARN, lower-cased, is unique), so:
- `/<kind>/<name>/` is the row of that name in the stack's region (`SAGEPORT_REGION`): for an
  account, its own, of which there is one at most; for an operator, any account's. When several
  accounts have one the operator gets the candidates (HTTP 300), never one picked at random.
- `/accounts/<account id>/<region>/<kind>/<name>/` names the account and region as the ARN does.
  Every link an operator follows has it (names collide across accounts), and so has an account's
  link to a row outside the stack's region. The scope is a path prefix, not a query parameter,
  because the pages' scripts add their own query (`?stream=...`) to the sub-routes' addresses.

Another account's resource is as absent as a missing one: the lookup runs over `Viewer.visible`
rows only. A deletion cannot leave a row shadowing a new one of the same name: the ARN is unique,
so SageMaker's "name already in use" holds until the old row is gone.

Old id addresses (`/training-jobs/2/`) redirect to the name's when the viewer can see the row.
A name may be digits only, so the name is looked up first and the id only when no name matches.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from operator import attrgetter

from django.conf import settings
from django.db.models import Model, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import path, register_converter, reverse

from batchtransform.models import TransformJob
from clusters.models import Cluster
from console.viewer import Viewer, console_view
from elastic.models import HyperPodJob
from hosting.models import Endpoint, EndpointConfig, InferenceComponent, SageMakerModel
from modelregistry.models import ModelPackage, ModelPackageGroup
from pipelines.models import Pipeline, PipelineExecution
from processing.models import ProcessingJob
from training.models import TrainingJob
from tuning.models import HyperParameterTuningJob

CANDIDATES_SHOWN = 50


class NameConverter:
    """Every kind's name pattern in botocore (`[a-zA-Z0-9](-*[a-zA-Z0-9]){0,N}`, N up to 255 for
    pipelines; the looser `[a-zA-Z0-9]([\\-a-zA-Z0-9]*[a-zA-Z0-9])?` of models and inference
    components is the same language). Anything else is no address: the console's 404."""

    regex = r"[a-zA-Z0-9](?:-*[a-zA-Z0-9]){0,255}"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


class AccountConverter(NameConverter):
    regex = r"[0-9]{12}"


class RegionConverter(NameConverter):
    regex = r"[a-z0-9](?:-?[a-z0-9]){0,31}"


class OldIdConverter:
    """A database id of an old address: digits a bigint holds (more would be the database's error)."""

    regex = r"[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


class VersionConverter(OldIdConverter):
    """A model package's version (`/[0-9]{1,9}` in its ARN)."""

    regex = r"[0-9]{1,9}"


register_converter(NameConverter, "sm-name")
register_converter(AccountConverter, "account-id")
register_converter(RegionConverter, "region")
register_converter(VersionConverter, "version")
register_converter(OldIdConverter, "old-id")

SCOPE = "accounts/<account-id:account>/<region:region>/"


@dataclass(frozen=True)
class Kind:
    """How a kind's row is named in its address."""

    # The rows of the kind the console shows.
    rows: Callable[[], QuerySet]
    # (URL argument, field): what names one row within an account and region. An argument missing
    # from an address means the field is empty (an unversioned model package has no version).
    keys: tuple[tuple[str, str], ...]
    # Where the row's account_id and region are, when not on the row itself.
    owner: str = ""

    def key_of(self, row: Model) -> dict:
        values = {argument: attrgetter(field.replace("__", "."))(row) for argument, field in self.keys}
        return {argument: value for argument, value in values.items() if value is not None}

    def scope_of(self, row: Model) -> tuple[str, str]:
        owner = attrgetter(self.owner.rstrip("_").replace("__", "."))(row) if self.owner else row
        return owner.account_id, owner.region

    def visible(self, viewer: Viewer) -> QuerySet:
        rows = self.rows()
        return rows if viewer.is_operator else rows.filter(**{f"{self.owner}account_id": viewer.account_id})

    def named(self, viewer: Viewer, arguments: dict) -> QuerySet:
        """The visible rows the address names (names are case-insensitive, as the ARN is)."""
        lookup = {}
        for argument, field in self.keys:
            value = arguments.get(argument)
            if value is None:
                lookup[f"{field}__isnull"] = True
            else:
                lookup[f"{field}__iexact" if isinstance(value, str) else field] = value
        account, region = arguments.get("account"), arguments.get("region", settings.SAGEPORT_REGION)
        if account is not None:
            lookup[f"{self.owner}account_id"] = account
        lookup[f"{self.owner}region"] = region
        return self.visible(viewer).filter(**lookup)


KINDS: dict[type[Model], Kind] = {
    TrainingJob: Kind(TrainingJob.objects.all, (("name", "training_job_name"),)),
    ProcessingJob: Kind(ProcessingJob.objects.all, (("name", "processing_job_name"),)),
    TransformJob: Kind(TransformJob.objects.all, (("name", "transform_job_name"),)),
    HyperParameterTuningJob: Kind(HyperParameterTuningJob.objects.all, (("name", "name"),)),
    Pipeline: Kind(Pipeline.objects.all, (("name", "name"),)),
    # Its ARN's `pipeline/<name>/execution/<id>`.
    PipelineExecution: Kind(
        lambda: PipelineExecution.objects.select_related("pipeline"),
        (("name", "pipeline__name"), ("execution", "execution_id")),
        owner="pipeline__",
    ),
    # An inference component's runner is no endpoint of the account's (ListEndpoints hides it).
    Endpoint: Kind(
        lambda: Endpoint.objects.filter(runs_component__isnull=True), (("name", "endpoint_name"),)
    ),
    InferenceComponent: Kind(
        lambda: InferenceComponent.objects.select_related("runner", "endpoint"),
        (("name", "inference_component_name"),),
    ),
    EndpointConfig: Kind(EndpointConfig.objects.all, (("name", "endpoint_config_name"),)),
    SageMakerModel: Kind(SageMakerModel.objects.all, (("name", "model_name"),)),
    ModelPackageGroup: Kind(ModelPackageGroup.objects.all, (("name", "model_package_group_name"),)),
    # Its ARN's `model-package/<group>/<version>`, or `model-package/<name>` unversioned.
    ModelPackage: Kind(
        lambda: ModelPackage.objects.select_related("group"),
        (("name", "model_package_name"), ("version", "model_package_version")),
    ),
    Cluster: Kind(Cluster.objects.all, (("name", "cluster_name"),)),
    # A Kubernetes object's own identity: namespace and name.
    HyperPodJob: Kind(HyperPodJob.objects.all, (("namespace", "namespace"), ("name", "name"))),
}


def address(viewer: Viewer, row: Model, page: str) -> str:
    """The address of `page` (a URL name: the resource's page or one of its sub-routes) of `row`."""
    kind = KINDS[type(row)]
    arguments = kind.key_of(row)
    account, region = kind.scope_of(row)
    if viewer.is_operator or region != settings.SAGEPORT_REGION:
        arguments |= {"account": account, "region": region}
    return reverse(page, kwargs=arguments)


class Ambiguous(Exception):
    """Several rows have the name: the address needs their account."""

    def __init__(self, rows: list[Model]):
        self.rows = rows


class Moved(Exception):
    """An old id address of a row the viewer may see."""

    def __init__(self, row: Model):
        self.row = row


def resolve(viewer: Viewer, model: type[Model], arguments: dict) -> Model:
    """The one visible row the address names; Ambiguous when several accounts' rows have the name
    (an operator's address without the account), Moved for an old id address, 404 otherwise."""
    kind = KINDS[model]
    found = list(kind.named(viewer, arguments)[: CANDIDATES_SHOWN + 1])
    if len(found) == 1:
        return found[0]
    if found:
        raise Ambiguous(found)
    old_id = arguments.get("name", "")
    if set(arguments) == {"name"} and re.fullmatch(OldIdConverter.regex, old_id):  # an old id address
        row = kind.visible(viewer).filter(pk=int(old_id)).first()
        if row is not None:
            raise Moved(row)
    raise Http404("No such resource.")


def resource_view(model: type[Model]) -> Callable:
    """A page (or sub-route) of one resource: the view gets the row its address names. An old id
    address redirects to the same sub-route under the name; an ambiguous one lists the candidates."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @console_view
        @wraps(view)
        def wrapper(request: HttpRequest, viewer: Viewer, **arguments) -> HttpResponse:
            try:
                row = resolve(viewer, model, arguments)
            except Moved as moved:
                # 307 keeps a POST a POST (an action from a page served before the change).
                status = 302 if request.method in ("GET", "HEAD") else 307
                return HttpResponseRedirect(
                    address(viewer, moved.row, request.resolver_match.view_name), status=status
                )
            except Ambiguous as ambiguous:
                return _candidates(request, viewer, ambiguous.rows)
            return view(request, viewer, row)

        return wrapper

    return decorate


def _candidates(request: HttpRequest, viewer: Viewer, rows: list[Model]) -> HttpResponse:
    page = request.resolver_match.view_name
    kind = KINDS[type(rows[0])]
    choices = [
        {"scope": kind.scope_of(row), "href": address(viewer, row, page)}
        for row in sorted(rows[:CANDIDATES_SHOWN], key=kind.scope_of)
    ]
    context = {"path": request.path, "choices": choices, "more": len(rows) > CANDIDATES_SHOWN}
    return render(request, "console/candidates.html", context, status=300)


def moved(model: type[Model], page: str) -> Callable[..., HttpResponse]:
    """An old id address whose shape the name's address no longer has (a pipeline execution's, a
    HyperPod job's): a redirect when the viewer can see the row, the console's 404 otherwise."""

    @console_view
    def view(request: HttpRequest, viewer: Viewer, pk: int) -> HttpResponse:
        row = KINDS[model].visible(viewer).filter(pk=pk).first()
        if row is None:
            raise Http404("No such resource.")
        return redirect(address(viewer, row, page))

    return view


def named_paths(prefix: str, routes: list[tuple[str, Callable, str]]) -> list:
    """The routes (suffix, a `resource_view`, URL name) of a resource under `prefix` (its name's
    address), each twice: without and with the account-and-region scope, under the same URL name
    (`reverse` picks the one whose arguments it is given)."""
    found = []
    for suffix, view, name in routes:
        found.append(path(f"{prefix}{suffix}", view, name=name))
        found.append(path(f"{SCOPE}{prefix}{suffix}", view, name=name))
    return found
