"""A training script as a user writes it, for test_torchrun.py: each rank writes report-RANK.json
(to the working directory; the ranks share one stdout, where lines may interleave)."""

import json
from pathlib import Path

import smdistributed.modelparallel.torch as smp
import torch

torch.set_num_threads(1)
smp.init()
gathered = smp.allgather(smp.rank(), smp.MP_GROUP)
if smp.rank() == 0:
    smp.broadcast("from rank 0", smp.WORLD)
    received = None
else:
    received = smp.recv_from(0, smp.RankType.WORLD_RANK)
smp.barrier()
report = {"rank": smp.rank(), "size": smp.size(), "mp_rank": smp.mp_rank(), "dp_rank": smp.dp_rank(),
          "local_rank": smp.local_rank(), "mp_allgather": gathered, "received": received}
Path(f"report-{smp.rank()}.json").write_text(json.dumps(report))
