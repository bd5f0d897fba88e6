"""`<data>/kubeconfig`: the Kubernetes client configuration of the stack's HyperPodPyTorchJob API
(elastic/kube/), so that the `kubernetes` Python client, `hyp` and kubectl reach it as they would
an EKS cluster. Its user's token is the default access key (`<AccessKeyId>.<SecretAccessKey>`)."""

import json
from pathlib import Path

KUBECONFIG_NAME = "kubeconfig"
CONTEXT = "sageport"


def write_kubeconfig(path: Path, api_url: str, access_key_id: str, secret_access_key: str) -> Path:
    """JSON, which every kubeconfig reader parses as the YAML it expects; mode 0600 (a secret)."""
    user = f"{CONTEXT}-user"
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": api_url}}],
        "users": [{"name": user, "user": {"token": f"{access_key_id}.{secret_access_key}"}}],
        "contexts": [
            {"name": CONTEXT, "context": {"cluster": CONTEXT, "user": user, "namespace": "default"}}
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }
    path.touch(mode=0o600)
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path
