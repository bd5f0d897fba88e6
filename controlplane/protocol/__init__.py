"""AWS wire protocols for Sageport. This package knows AWS formats (JSON 1.1, REST-JSON,
SigV4, errors, pagination, ARNs) and imports nothing from the apps: apps register handlers."""
