"""HyperPodPyTorchJob manifests for the spec's and the API's tests."""

import copy


def job_manifest(name: str = "train", **spec_overrides) -> dict:
    """A valid elastic job: one group `pods` of 1 (up to 4) replicas, one GPU each."""
    manifest = {
        "apiVersion": "sagemaker.amazonaws.com/v1",
        "kind": "HyperPodPyTorchJob",
        "metadata": {"name": name, "labels": {"team": "vision", "kueue.x-k8s.io/queue-name": "q-a"}},
        "spec": {
            "nprocPerNode": "1",
            "replicaSpecs": [{
                "name": "pods",
                "replicas": 1,
                "maxReplicas": 4,
                "template": {"spec": {"containers": [{
                    "name": "pytorch",
                    "image": "sageport-examples/elastic:latest",
                    "command": ["hyperpodrun", "--nnodes=1", "train.py"],
                    "env": [{"name": "EPOCHS", "value": "3"}],
                    "resources": {"limits": {"nvidia.com/gpu": 1, "cpu": "2", "memory": "4Gi"}},
                }]}},
            }],
            "elasticPolicy": {"minReplicas": 1, "maxReplicas": 4, "replicaIncrementStep": 1},
        },
    }
    manifest["spec"].update(copy.deepcopy(spec_overrides))
    return manifest


def container(manifest: dict) -> dict:
    return pod(manifest)["containers"][0]


def pod(manifest: dict) -> dict:
    return manifest["spec"]["replicaSpecs"][0]["template"]["spec"]
