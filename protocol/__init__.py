"""The AWS wire protocol: JSON 1.1 and REST-JSON formats, SigV4, input validation against the
botocore models, errors, pagination, ARNs, listing filters, the operation registry and its view,
and the bounded threaded HTTP server of the S3 gateway and the checkpoint tier.
The bottom layer: imports no other Sageport package."""
