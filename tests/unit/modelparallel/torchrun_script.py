"""A training script as a user writes it, for test_torchrun.py: prints one JSON line per rank."""

import json

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
print(json.dumps(report), flush=True)
