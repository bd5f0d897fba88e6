"""The console's address of an S3 URI (console/views_s3.py serves it): the browser cannot follow
an s3:// URI, and the store's own address wants a signature."""
from django.urls import reverse


def href(uri: str) -> str:
    """A listing for a bucket or a prefix ending in "/", the download of an object otherwise."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    if not key:
        return reverse("console:s3-bucket", args=[bucket])
    return reverse("console:s3", args=[bucket, key])


def folder_href(uri: str) -> str:
    """The listing of `uri` taken as a prefix (a channel's or an output's S3Uri, with or without
    its final "/")."""
    return href(uri.rstrip("/") + "/")
