"""The HyperPod training operator (being written)."""


def reconcile(pk: int) -> None:
    return None
