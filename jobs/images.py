"""A job's image on the engine before its containers start: a local image is used as it is,
never re-pulled; a missing one is pulled (when SAGEPORT_PULL_MISSING_IMAGES allows), its
progress told as it goes, since a pull can take minutes and the job's user should see why and
how far it has come."""
from collections.abc import Callable

from django.conf import settings

from runtime.base import ContainerRuntime, NoSuchImage


def ensure(runtime: ContainerRuntime, image: str, what: str, report: Callable[[str], None]) -> None:
    """`what`: the image as the status message names it ("training image"); `report(message)`
    shows the message (a feature's StatusMessage). NoSuchImage when it cannot be had."""
    if runtime.has_image(image):
        return
    if not settings.SAGEPORT_PULL_MISSING_IMAGES:
        raise NoSuchImage(
            f'Image "{image}" is not present in the local Docker engine and pulling is disabled '
            "(SAGEPORT_PULL_MISSING_IMAGES=false)."
        )
    pulling = f"Pulling the {what} {image}"
    report(pulling)
    runtime.pull_image(image, report=lambda progress: report(f"{pulling}: {progress}"))
