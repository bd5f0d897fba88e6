"""HyperPod elastic training (app label "elastic"): HyperPodPyTorchJobs submitted through a
Kubernetes-style API, and the operator that places their replicas and drives AWS's
`hyperpod-elastic-agent` in each. May import: gateway, clusters, logs, capacity, accounts,
reconcile, runtime, storage, protocol."""
