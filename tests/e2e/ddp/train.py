"""A tiny PyTorch DDP training (gloo) for a multi-instance job, as SageMaker's PyTorch examples
write one: the world is the job's hosts (resourceconfig.json), rank 0 is algo-1 and saves the
model, as only rank 0 does in AWS's examples; every rank also writes what it ended with, so that
the merged model.tar.gz shows both instances took part and held the same parameters.

Each rank first lists the job's code in S3 with the container's role credentials, both reached
through the services network's gateway (the node's forwarder), as SageMaker code does."""
import hashlib
import json
import os
import time
from datetime import timedelta

import boto3
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

STEPS = 40
# Seconds each step lasts at least (DDP_STEP_SECONDS): a test that loses a node mid-training
# stretches the training so that the loss lands in it.
STEP_SECONDS = float(os.environ.get("DDP_STEP_SECONDS", "0"))
MODEL_DIR = "/opt/ml/model"
# How long rank 0 waits for the others: each node starts its own instance, and on two busy cores
# one may start a minute or more after the other (torch's own default is 30 minutes).
RENDEZVOUS_SECONDS = 240

config = json.load(open("/opt/ml/input/config/resourceconfig.json"))
hosts, current = config["hosts"], config["current_host"]
rank = hosts.index(current)
seen = boto3.client("s3").list_objects_v2(Bucket=os.environ["CODE_BUCKET"], Prefix="code/")["KeyCount"]

dist.init_process_group("gloo", init_method=f"tcp://{hosts[0]}:29500", rank=rank, world_size=len(hosts),
                        timeout=timedelta(seconds=RENDEZVOUS_SECONDS))
torch.manual_seed(0)  # the same initial parameters on every rank (DDP also broadcasts rank 0's)
model = DistributedDataParallel(torch.nn.Linear(4, 1))
torch.manual_seed(1 + rank)  # each rank its own shard of y = x . (1, 2, 3, 4)
inputs = torch.randn(64, 4)
targets = inputs @ torch.tensor([[1.0], [2.0], [3.0], [4.0]])
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(STEPS):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    loss.backward()  # gradients averaged over the ranks, across the job's overlay network
    optimizer.step()
    time.sleep(STEP_SECONDS)

parameters = b"".join(p.detach().numpy().tobytes() for p in model.parameters())
summary = {"host": current, "rank": rank, "world_size": dist.get_world_size(), "loss": loss.item(),
           "parameters": hashlib.sha256(parameters).hexdigest(), "code_objects_seen": seen}
with open(f"{MODEL_DIR}/rank-{rank}.json", "w") as out:
    json.dump(summary, out)
if rank == 0:
    torch.save(model.module.state_dict(), f"{MODEL_DIR}/model.pt")
dist.barrier()
dist.destroy_process_group()
