"""The Kubernetes-style REST API of HyperPodPyTorchJobs on the API port: discovery (`/version`,
`/api`, `/apis/...`), the custom resource's paths, bearer-token authentication with an access
key, and `Status` errors. Clients: the `kubernetes` Python client's CustomObjectsApi and `hyp`."""
