"""Scenarios (run by every rank of a test World, see scenarios.serve) for the API around the
pipeline: DistributedOptimizer as a torch optimizer, smp.save / smp.load, smp.amp.GradScaler and
SageMaker's v1 aliases. Their model is an nn.Sequential that the pipeline can split."""

import math
from pathlib import Path

import pytest
import smdistributed.modelparallel.torch as smp
import torch
import torch.distributed as dist

BATCH, FEATURES = 16, 4


def make_model(seed):
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8), torch.nn.Tanh(),
        torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1),
    ).double()


def make_problem(seed=0):
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(BATCH, FEATURES, generator=generator, dtype=torch.float64)
    return inputs, inputs.sum(dim=1, keepdim=True).tanh()


def my_shard(tensor):
    rows = BATCH // smp.dp_size()
    return tensor[smp.dp_rank() * rows:(smp.dp_rank() + 1) * rows]


def training_step(model):
    @smp.step
    def train_step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        model.backward(loss)
        return loss

    return train_step


def train(model, optimizer, steps, seed=0, scaler=None):
    """`steps` steps on this rank's DP shard; the loss of each, averaged over the DP group."""
    inputs, targets = make_problem(seed)
    train_step = training_step(model)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = train_step(my_shard(inputs), my_shard(targets)).reduce_mean()
        optimizer.step()
        losses.append(sum(smp.allgather(loss.item(), smp.DP_GROUP)) / smp.dp_size())
    return losses


def local_parameters(model):
    return {name: p.detach().clone() for name, p in model.named_parameters()
            if any(p is q for q in model.local_parameters())}


# ---- DistributedOptimizer ----

def optimizer_drives_a_scheduler():
    """StepLR takes the DistributedOptimizer as the torch optimizer it is; the learning rate it
    sets is the one the wrapped optimizer steps with."""
    model = smp.DistributedModel(make_model(seed=1))
    inner = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer = smp.DistributedOptimizer(inner)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    rates = []
    for _ in range(3):
        train(model, optimizer, 1)
        scheduler.step()
        rates.append(inner.param_groups[0]["lr"])
    assert isinstance(optimizer, torch.optim.Optimizer)
    assert optimizer.param_groups is inner.param_groups and optimizer.state is inner.state
    held = {id(p) for g in optimizer.param_groups for p in g["params"]}
    assert held == {id(p) for p in model.local_parameters()}
    return rates


def optimizer_state_dicts():
    """local_state_dict() is this rank's; state_dict() the whole model's, the same on every rank
    of the MP group; both load back into a fresh optimizer, which then steps as the original."""
    model = smp.DistributedModel(make_model(seed=1))
    optimizer = smp.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01))
    train(model, optimizer, 2)
    local, full = optimizer.local_state_dict(), optimizer.state_dict()
    assert local["_smp_is_partial"] is True and "_smp_is_partial" not in full
    assert len(local["state"]) == len(list(model.local_parameters()))
    names = [n for group in full["_smp_param_names"] for n in group]
    assert [n.removeprefix("module.") for n in names] == [n for n, _ in make_model(1).named_parameters()]
    steps = [float(s["step"]) for s in full["state"].values()]
    for saved in (local, full):
        copy = smp.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.5))
        copy.load_state_dict(saved)
        assert copy.param_groups[0]["lr"] == 0.01
        for param in model.local_parameters():
            assert torch.equal(copy.state[param]["exp_avg"], optimizer.state[param]["exp_avg"])
    return {"names": names, "steps": steps}


def optimizer_rejects_another_partitions_state():
    model = smp.DistributedModel(make_model(seed=1))
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))
    train(model, optimizer, 1)
    local = optimizer.local_state_dict()
    local["_smp_param_names"] = [["module.not.a.parameter"]]
    with pytest.raises(ValueError, match="another partition's"):
        optimizer.load_state_dict(local)
    return True


# ---- smp.save / smp.load ----

def save_checkpoints(directory):
    """Train 2 steps, save as AWS's example does (dp_rank 0 only; partial and full), return what
    a restarted job must find."""
    model = smp.DistributedModel(make_model(seed=1))
    optimizer = smp.DistributedOptimizer(torch.optim.Adadelta(model.parameters(), lr=1.0))
    train(model, optimizer, 2)
    full = {"model_state_dict": model.state_dict(), "optimizer_state_dict": optimizer.state_dict()}
    if smp.dp_rank() == 0:
        smp.save({"model_state_dict": model.local_state_dict(),
                  "optimizer_state_dict": optimizer.local_state_dict()},
                 f"{directory}/checkpoint.pt", partial=True)
        smp.save(full, f"{directory}/checkpoint.pt", partial=False)
    smp.barrier()
    later = train(model, optimizer, 2, seed=1)
    return {"files": sorted(p.name for p in Path(directory).iterdir()), "later_losses": later,
            "parameters": local_parameters(model)}


def resume_from(directory, partial):
    """A restarted job loads the checkpoint into a model built from another seed and trains the
    same 2 steps as the job that saved it."""
    model = smp.DistributedModel(make_model(seed=7))
    optimizer = smp.DistributedOptimizer(torch.optim.Adadelta(model.parameters(), lr=1.0))
    checkpoint = smp.load(f"{directory}/checkpoint.pt", partial=partial)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    later = train(model, optimizer, 2, seed=1)
    return {"later_losses": later, "parameters": local_parameters(model)}


def load_errors(directory):
    with pytest.raises(FileNotFoundError, match="partial checkpoint .*checkpoint.pt_0_0"):
        smp.load(f"{directory}/checkpoint.pt", partial=True)
    with pytest.raises(TypeError, match="file name"):
        smp.save({}, open(f"{directory}/f{smp.rank()}", "wb"))
    return True


def save_checkpoint_folders(directory):
    """smp.save_checkpoint as Hugging Face's Trainer calls it: partial checkpoints at two steps
    (one kept), then a full one; every rank calls it."""
    model = smp.DistributedModel(make_model(seed=1))
    optimizer = smp.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01))
    for step in (1, 2):
        train(model, optimizer, 1)
        smp.save_checkpoint(directory, f"step{step}", partial=True, model=model, optimizer=optimizer,
                            user_content={"step": step}, num_kept_partial_checkpoints=1)
    smp.save_checkpoint(directory, "model.pt", partial=False, model=model, optimizer=optimizer,
                        user_content={"step": 2})
    later = train(model, optimizer, 2, seed=1)
    return {"files": sorted(str(p.relative_to(directory)) for p in Path(directory).rglob("*")),
            "newest": (Path(directory) / "newest").read_text(), "later_losses": later,
            "parameters": local_parameters(model)}


def resume_checkpoint_folder(directory, partial):
    model = smp.DistributedModel(make_model(seed=7))
    optimizer = smp.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.5))
    content = smp.resume_from_checkpoint(directory, tag="step2" if partial else None, partial=partial)
    later = train(model, optimizer, 2, seed=1)
    return {"user_content": content, "later_losses": later, "parameters": local_parameters(model)}


# ---- smp.amp.GradScaler ----

def grad_scaler_skips_the_step_everywhere(overflow_rank):
    """An inf in the gradients of one rank only: no rank steps, every rank halves its scale; the
    next step, clean, is taken by all."""
    model = smp.DistributedModel(make_model(seed=1))
    optimizer = smp.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    scaler = smp.amp.GradScaler(init_scale=1024.0)
    inputs, targets = make_problem()

    @smp.step
    def train_step(x, y):
        loss = torch.nn.functional.mse_loss(model(x), y)
        model.backward(scaler.scale(loss))
        return loss

    results = []
    for poison in (True, False):
        before = local_parameters(model)
        optimizer.zero_grad()
        train_step(my_shard(inputs), my_shard(targets))
        if poison and smp.rank() == overflow_rank:
            next(iter(model.local_parameters())).grad.view(-1)[0] = math.inf
        scaler.step(optimizer)
        scaler.update()
        after = local_parameters(model)
        # before the first step every rank held the whole model; after it, only its partition
        results.append({"stepped": any(not torch.equal(before[n], after[n]) for n in after),
                        "scale": scaler.get_scale()})
    return results


# ---- SageMaker's v1 aliases ----

def aliases():
    sizes = {name: dist.get_world_size(getattr(smp, f"get_{name}_process_group")())
             for name in ("world", "mp", "pp", "dp", "rdp")}
    with smp.model_creation(dtype=torch.float64):
        created = torch.nn.Linear(2, 2)
    return {
        "initialized": smp.is_initialized(), "tp": (smp.tp_rank(), smp.tp_size()),
        "rdp": (smp.rdp_rank(), smp.rdp_size()), "dp": (smp.dp_rank(), smp.dp_size()), "sizes": sizes,
        "tracing": smp.is_tracing(), "created": created.weight.dtype,
        "default_after": torch.get_default_dtype(),
    }
