"""A training script written against the model-parallel library's common API, as it would run on
SageMaker: every rank reports where it sits, the loss of one `smp.step` and the bytes of the
parameters it holds (`model.local_parameters()`) next to the whole model's; rank 0 writes the
reports of all ranks (gathered in rank order) into the model directory."""
import json
import socket

import smdistributed.modelparallel.torch as smp
import torch

smp.init()
torch.manual_seed(0)
# with partitions 2, each rank of an MP group holds about half of the layers' parameters
module = torch.nn.Sequential(
    torch.nn.Linear(4, 64), torch.nn.ReLU(), torch.nn.Linear(64, 64), torch.nn.ReLU(),
    torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1),
)
model_bytes = sum(p.numel() * p.element_size() for p in module.parameters())
model = smp.DistributedModel(module)
optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))


@smp.step
def train_step(inputs, targets):
    loss = torch.nn.functional.mse_loss(model(inputs), targets)
    model.backward(loss)
    return loss


inputs = torch.arange(32, dtype=torch.float32).reshape(8, 4) / 32
targets = inputs.sum(dim=1, keepdim=True)
optimizer.zero_grad()
loss = train_step(inputs, targets).reduce_mean()
optimizer.step()

report = {
    "host": socket.gethostname(),
    "rank": smp.rank(), "size": smp.size(),
    "mp_rank": smp.mp_rank(), "mp_size": smp.mp_size(),
    "dp_rank": smp.dp_rank(), "dp_size": smp.dp_size(),
    "local_rank": smp.local_rank(), "local_size": smp.local_size(),
    "loss": round(float(loss), 6),
    "parameter_bytes": sum(p.numel() * p.element_size() for p in model.local_parameters()),
    "model_bytes": model_bytes,
    "library": smp.__file__,
}
reports = smp.allgather(report, smp.WORLD)
if smp.rank() == 0:
    with open("/opt/ml/model/ranks.json", "w") as file:
        json.dump(reports, file)
smp.barrier()
