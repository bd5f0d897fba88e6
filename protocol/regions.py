"""The regions a credential scope may name: those AWS has, as botocore's own partitions data lists
them (botocore/data/partitions.json: aws, aws-cn, aws-us-gov, the ISO partitions, aws-eusc), plus
the stack's own configured regions. AWS refuses a scope naming any other region; so does Sageport,
rather than write it into ARNs."""

import re
from functools import cache

import botocore.loaders

# partitions.json also lists each partition's global endpoint (`aws-global`, ...), no region.
_REGION_NAME = re.compile(r"^[a-z]{2,4}(?:-[a-z]+)+-\d{1,2}$")


@cache
def known() -> frozenset[str]:
    partitions = botocore.loaders.create_loader().load_data("partitions")["partitions"]
    return frozenset(
        region for partition in partitions for region in partition["regions"] if _REGION_NAME.match(region)
    )


@cache
def accepted(own: tuple[str, ...]) -> frozenset[str]:
    """`known()` and the stack's own regions (`own`, a tuple: settings may name any region)."""
    return known() | frozenset(own)
