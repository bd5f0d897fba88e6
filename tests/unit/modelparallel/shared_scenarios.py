"""Scenarios written once for both variants: each takes the variant's smp module first, and
scenarios.py and tf_scenarios.py bind it (the ranks of a World run them by their names there)."""

import time
from pathlib import Path

RECEIVER_DELAY = 0.3  # a receiver's pause before it receives, so an unsynchronised sender would win


def layout(smp):
    return {
        "rank": smp.rank(), "size": smp.size(), "mp_rank": smp.mp_rank(), "mp_size": smp.mp_size(),
        "dp_rank": smp.dp_rank(), "dp_size": smp.dp_size(), "local_rank": smp.local_rank(),
        "local_size": smp.local_size(), "mp_group": smp.get_mp_group(), "dp_group": smp.get_dp_group(),
    }


def send_waits_for_receiver(smp, marker_dir):
    """World rank 1 writes a marker right before recv_from; rank 0's send must return after it."""
    marker = Path(marker_dir) / "receiver-called-recv_from"
    if smp.rank() == 1:
        time.sleep(RECEIVER_DELAY)
        marker.touch()
        return smp.recv_from(0, smp.RankType.WORLD_RANK)
    if smp.rank() == 0:
        smp.send("synchronous", 1, smp.RankType.WORLD_RANK)
        return marker.exists()
    return None


def group_members(smp, group_name):
    """The global ranks of this rank's WORLD, MP_GROUP or DP_GROUP, in group-rank order."""
    return {"WORLD": list(range(smp.size())), "MP_GROUP": smp.get_mp_group(),
            "DP_GROUP": smp.get_dp_group()}[group_name]
