"""The SageMaker model registry: model package groups, versioned and unversioned model packages,
their approval, and the container CreateModel deploys from one."""
