"""What a Kubernetes client asks before it calls a resource: the server's version and the API
groups, versions and resources it serves (only this CRD's group, and the core group's name)."""

from elastic.spec import KIND

GROUP = "sagemaker.amazonaws.com"
VERSION = "v1"
PLURAL = "hyperpodpytorchjobs"
SINGULAR = "hyperpodpytorchjob"
# What the kubernetes client and `hyp` check: `hyp` warns unless its kubernetes client (35 here,
# pyproject.toml) is at most one minor version ahead of the server and three behind.
KUBERNETES_VERSION = ("1", "34", "v1.34.0-sageport")


def version() -> dict:
    major, minor, git_version = KUBERNETES_VERSION
    return {
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "sageport",
        "platform": "linux/amd64",
    }


def core_versions(host: str) -> dict:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
    }


def group() -> dict:
    group_version = {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": GROUP,
        "versions": [group_version],
        "preferredVersion": group_version,
    }


def group_list() -> dict:
    entry = group()
    del entry["kind"], entry["apiVersion"]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [entry]}


def resource_list() -> dict:
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{GROUP}/{VERSION}",
        "resources": [{
            "name": PLURAL,
            "singularName": SINGULAR,
            "namespaced": True,
            "kind": KIND,
            "verbs": ["create", "delete", "get", "list", "patch"],
            "shortNames": ["hpj"],
            "categories": ["all"],
        }],
    }


CRD_NAME = f"{PLURAL}.{GROUP}"


def custom_resource_definition() -> dict:
    """The CRD as `hyp create` reads it (it refuses to submit when the CRD is missing)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "names": {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": SINGULAR,
                      "shortNames": ["hpj"]},
            "scope": "Namespaced",
            "versions": [{"name": VERSION, "served": True, "storage": True,
                          "subresources": {"status": {}}}],
        },
        "status": {
            "acceptedNames": {"kind": KIND, "plural": PLURAL},
            "storedVersions": [VERSION],
            "conditions": [{"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                            "message": "the initial names have been accepted"}],
        },
    }


def namespace(name: str) -> dict:
    """Every namespace exists for every account (they need no creating): `hyp` reads one before
    it lists or deletes in it."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": name, "labels": {"kubernetes.io/metadata.name": name}},
        "spec": {"finalizers": ["kubernetes"]},
        "status": {"phase": "Active"},
    }
