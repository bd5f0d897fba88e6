"""S3 through the console: a prefix's folders and objects, and an object's download, for the
signed-in account's own buckets only (an operator's: any). The browser never talks to the store:
its gateway wants SigV4, so a plain link to it answers AccessDenied. The object is streamed from
the store to the browser a chunk at a time, never held whole in the worker's memory."""
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import content_disposition_header

from accounts import s3_tenancy
from console.s3_links import href
from console.viewer import Viewer, console_view
from storage import s3

PAGE_SIZE = 200


@console_view
def bucket_root(request: HttpRequest, viewer: Viewer, bucket: str) -> HttpResponse:
    return _browse(request, viewer, bucket, "")


@console_view
def browse(request: HttpRequest, viewer: Viewer, bucket: str, key: str) -> HttpResponse:
    return _browse(request, viewer, bucket, key)


def _browse(request: HttpRequest, viewer: Viewer, bucket: str, key: str) -> HttpResponse:
    if not viewer.is_operator and not s3_tenancy.may_use(viewer.account_id, bucket):
        raise Http404("Another account's bucket.")
    try:
        if key and not key.endswith("/"):
            return _download(bucket, key)
        listing = s3.list_level(bucket, key, request.GET.get("token") or None, PAGE_SIZE)
    except s3.StorageError as error:
        if "NoSuchBucket" in str(error):
            raise Http404("No such bucket.") from error
        return render(request, "console/s3_error.html", {"error": error}, status=502)
    context = {
        "bucket": bucket, "prefix": key, "crumbs": _crumbs(bucket, key), "listing": listing,
        "folders": [(folder[len(key):], href(f"s3://{bucket}/{folder}")) for folder in listing.folders],
        "objects": [
            (item["Key"][len(key):], item, href(f"s3://{bucket}/{item['Key']}")) for item in listing.objects
        ],
    }
    return render(request, "console/s3_listing.html", context)


def _download(bucket: str, key: str) -> HttpResponse:
    size = s3.object_size(bucket, key)
    if size is None:
        raise Http404("No such object.")
    response = StreamingHttpResponse(s3.iter_object(bucket, key), content_type="application/octet-stream")
    response["Content-Length"] = str(size)
    response["Content-Disposition"] = content_disposition_header(True, key.rsplit("/", 1)[-1])
    return response


def _crumbs(bucket: str, prefix: str) -> list[tuple[str, str]]:
    """(name, listing address) of the bucket and of each folder down to `prefix`."""
    crumbs = [(bucket, href(f"s3://{bucket}"))]
    parts = [part for part in prefix.split("/") if part]
    for depth in range(len(parts)):
        crumbs.append((parts[depth], href(f"s3://{bucket}/{'/'.join(parts[:depth + 1])}/")))
    return crumbs
