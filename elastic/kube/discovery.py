"""What a Kubernetes client asks before it calls a resource: the server's version and the API
groups, versions and resources it serves (only this CRD's group, and the core group's name)."""

from elastic.spec import KIND

GROUP = "sagemaker.amazonaws.com"
VERSION = "v1"
PLURAL = "hyperpodpytorchjobs"
SINGULAR = "hyperpodpytorchjob"
# What the kubernetes client and `hyp` check (`hyp` warns below its supported minor version).
KUBERNETES_VERSION = ("1", "31", "v1.31.0-sageport")


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
            "verbs": ["create", "delete", "get", "list"],
            "shortNames": ["hpj"],
            "categories": ["all"],
        }],
    }
