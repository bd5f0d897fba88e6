"""The regions a credential scope may name are botocore's own list (partitions.json), not a
hand-typed one: every partition's regions, and nothing else."""

import botocore.loaders

from protocol import regions


def test_known_regions_are_every_partitions_regions_from_botocore():
    partitions = botocore.loaders.create_loader().load_data("partitions")["partitions"]
    listed = {region for partition in partitions for region in partition["regions"]}
    assert regions.known() == {region for region in listed if not region.endswith("-global")}
    assert {"us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1", "eusc-de-east-1"} <= regions.known()
    assert "xx-fake-9" not in regions.known() and "aws-global" not in regions.known()


def test_the_stacks_own_regions_are_accepted_besides():
    assert "xx-local-1" in regions.accepted(("xx-local-1",))
    assert "xx-fake-9" not in regions.accepted(("xx-local-1",))
