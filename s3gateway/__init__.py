"""The S3 gateway: Sageport's authenticating front of the bundled SeaweedFS (docs/s3.md)."""
