"""Why one input object cannot be transformed: the reason a transform job fails with.

SageMaker fails the job when any object fails, names the object in its data log, and uploads no
`.out` for that object (API reference, TransformOutput.S3OutputPath; developer guide, "Batch
Transform Errors"). The data path raises `ObjectFailed` with the reason; the job layer adds the
object's name."""


class ObjectFailed(Exception):
    """An input object that cannot be transformed; the message is the reason shown to the user."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
