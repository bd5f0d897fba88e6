"""Elastic training with AWS's HyperPod elastic agent: a training loop that survives a change of
world size (replicas added or taken away) without losing or repeating data.

`hyperpodrun` starts this script in every replica when the operator says so (POST /start), with
torchrun's environment (RANK, WORLD_SIZE, MASTER_ADDR...). The ranks train a tiny model with DDP
(gloo, CPU) on a deterministic dataset of sample ids 0..total_samples-1. Each step the world takes
the next `world_size * batch_per_rank` ids from its data position; rank r takes the r-th slice.

Every step the script calls `elastic_event_detected()`. When the operator scales the job it sends
a graceful /stop to every agent, which signals the workers (SIGUSR1); with
HYPERPOD_SIGNAL_COORDINATION=distributed all ranks see the event in the same step. The script then
saves a checkpoint and exits 0. The operator starts the new world, and every rank resumes from the
newest complete checkpoint: model, optimizer, step and data position. Checkpoints are PyTorch
Distributed Checkpoints (DCP), which load at another world size; they go to `--checkpoint-dir`
(it must be shared by every replica, e.g. one volume mounted in all of them) as `step_<N>/`, also
every `--checkpoint-every` steps. The script exits 0 when the data is exhausted (the agent then
reports `completed`).

With `--tier-namespace` the checkpoints go to HyperPod's in-memory checkpoint tier instead, through
AWS's `amzn-sagemaker-checkpointing` (its DCP `SageMakerTieredStorageWriter`/`Reader`, unchanged),
and also to S3 when `--tier-s3-base-path` is given. The library ties a namespace to one world size
(its metadata shard is rank `world_size`), so each world saves to `<namespace>-world-<size>`; a new
world resumes from the newest step of any of them, read at the size it was saved at, and DCP
reshards it to the new world. The shared `--checkpoint-dir` then only holds the records.

What each rank did is appended as JSON lines to
`<checkpoint-dir>/records/rank-<rank>-restart-<restart count>-<pid>.jsonl`:
  {"event": "started", "rank", "world_size", "step", "position", "checkpoint": path or null}
  {"step", "rank", "world_size", "samples": [...], "time"}          one per training step
  {"event": "saved", "rank", "step", "checkpoint": path, "time"}    once a checkpoint's save returned
  {"event": "elastic", "rank", "step", "checkpoint": path}          after saving on an elastic event
  {"event": "completed", "rank", "step"}                            when the data is exhausted

Options (each also read from the environment variable named in its help):
  --checkpoint-dir, --total-samples, --batch-per-rank, --step-seconds, --checkpoint-every,
  --tier-namespace, --tier-s3-base-path, --tier-max-world-size
"""
import argparse
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp

# Importing the handler installs its SIGUSR1 handler: without it the agent's graceful stop would
# kill this process instead of letting it save.
from hyperpod_elastic_agent.elastic_event_handler import elastic_event_detected
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel

FEATURES = 8
CHECKPOINT_PREFIX = "step_"


def positive_int(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) == 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, not {text!r}")
    return int(text)


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds >= 0, not {text!r}")
    return value


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    env = os.environ.get
    parser.add_argument("--checkpoint-dir", type=Path, default=env("CHECKPOINT_DIR", "/opt/ml/checkpoints"),
                        help="shared directory for checkpoints and records (CHECKPOINT_DIR)")
    parser.add_argument("--total-samples", type=positive_int, default=env("TOTAL_SAMPLES", "512"),
                        help="size of the dataset, in samples (TOTAL_SAMPLES)")
    parser.add_argument("--batch-per-rank", type=positive_int, default=env("BATCH_PER_RANK", "4"),
                        help="samples each rank trains on per step (BATCH_PER_RANK)")
    parser.add_argument("--step-seconds", type=non_negative_float, default=env("STEP_SECONDS", "0.5"),
                        help="pause after each step, to watch the job scale (STEP_SECONDS)")
    parser.add_argument("--checkpoint-every", type=positive_int, default=env("CHECKPOINT_EVERY", "20"),
                        help="also save a checkpoint every N steps (CHECKPOINT_EVERY)")
    parser.add_argument("--tier-namespace", default=env("TIER_NAMESPACE", ""),
                        help="checkpoint to the in-memory tier under <this>-world-<size> (TIER_NAMESPACE)")
    parser.add_argument("--tier-s3-base-path", default=env("TIER_S3_BASE_PATH", ""),
                        help="also save each tier checkpoint under this s3:// prefix (TIER_S3_BASE_PATH)")
    parser.add_argument("--tier-max-world-size", type=positive_int, default=env("TIER_MAX_WORLD_SIZE", "8"),
                        help="the largest world whose checkpoints are looked for (TIER_MAX_WORLD_SIZE)")
    return parser.parse_args()


class Records:
    """This process's JSON-lines file in <checkpoint-dir>/records."""

    def __init__(self, checkpoint_dir: Path, rank: int):
        restart = os.environ.get("TORCHELASTIC_RESTART_COUNT", os.environ.get("JOB_RESTART_COUNT", "0"))
        folder = checkpoint_dir / "records"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"rank-{rank}-restart-{restart}-{os.getpid()}.jsonl"
        self.rank = rank

    def write(self, **record) -> None:
        with self.path.open("a") as file:
            file.write(json.dumps({"rank": self.rank, **record}) + "\n")


def checkpoint_step(path: Path) -> int:
    return int(path.name[len(CHECKPOINT_PREFIX):])


def newest_complete_checkpoint(checkpoint_dir: Path) -> Path | None:
    """The highest step_<N> whose DCP metadata exists: DCP writes `.metadata` last (by rename),
    once every rank's data is written, so a save cut short is never picked."""
    complete = [
        path for path in checkpoint_dir.glob(CHECKPOINT_PREFIX + "*")
        if path.name[len(CHECKPOINT_PREFIX):].isdigit() and (path / ".metadata").is_file()
    ]
    return max(complete, key=checkpoint_step, default=None)


def agreed_checkpoint(args):
    """Rank 0's choice, so that every rank loads the same checkpoint whatever its view of the
    shared directory (or of the tier): a path, (world size, step) in the tier, or None."""
    if dist.get_rank() != 0:
        choice = [None]
    elif args.tier_namespace:
        choice = [newest_tier_checkpoint(args)]
    else:
        choice = [newest_complete_checkpoint(args.checkpoint_dir)]
    dist.broadcast_object_list(choice, src=0)
    return choice[0]


def save_checkpoint(args, model, optimizer, progress: dict) -> str:
    """Where the checkpoint went (for the records)."""
    model_state, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optimizer": optimizer_state, "progress": dict(progress)}
    if args.tier_namespace:
        return tier_save(args, state, progress["step"])
    path = args.checkpoint_dir / f"{CHECKPOINT_PREFIX}{progress['step']}"
    if dist.get_rank() == 0:
        # A world killed after saving this step leaves it behind; while it is rewritten it must not
        # look complete (the other ranks write only after rank 0 has entered dcp.save).
        (path / ".metadata").unlink(missing_ok=True)
    dcp.save(state, storage_writer=dcp.FileSystemWriter(path))
    return str(path)


def load_checkpoint(args, checkpoint, model, optimizer) -> dict:
    """Loads model and optimizer in place (DCP reshards to this world size); returns the progress."""
    model_state, optimizer_state = get_state_dict(model, optimizer)
    state = {"model": model_state, "optimizer": optimizer_state, "progress": {"step": 0, "position": 0}}
    if args.tier_namespace:
        tier_load(args, checkpoint, state)
    else:
        dcp.load(state, storage_reader=dcp.FileSystemReader(checkpoint))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    return state["progress"]


# The in-memory tier's side of the above: AWS's library, imported only when used (a job without
# the tier needs none of it).


def tier_namespace(args, world_size: int) -> str:
    return f"{args.tier_namespace}-world-{world_size}"


def tier_config(args, world_size: int):
    from amzn_sagemaker_checkpointing.config.sagemaker_checkpoint_config import SageMakerCheckpointConfig

    return SageMakerCheckpointConfig(
        namespace=tier_namespace(args, world_size), world_size=world_size,
        s3_tier_base_path=args.tier_s3_base_path, save_to_s3=bool(args.tier_s3_base_path),
    )


def tier_save(args, state: dict, step: int) -> str:
    from amzn_sagemaker_checkpointing.checkpointing.filesystem.filesystem import SageMakerTieredStorageWriter

    world_size = dist.get_world_size()
    dcp.save(state, storage_writer=SageMakerTieredStorageWriter(tier_config(args, world_size), step=step))
    return f"tier:{tier_namespace(args, world_size)}/step_{step}"


def newest_tier_checkpoint(args) -> tuple[int, int] | None:
    """(world size, step): the newest step the tier lists as complete, over every world size."""
    from amzn_sagemaker_checkpointing.storage.clients.inmemory.inmemory_client import InMemoryCheckpointClient

    newest = None
    for world_size in range(1, args.tier_max_world_size + 1):
        client = InMemoryCheckpointClient(tier_namespace(args, world_size), "0", str(world_size))
        try:
            steps = client.get_latest_checkpoints(limit=1)
        finally:
            client.close()
        if steps and (newest is None or steps[0] > newest[1]):
            newest = (world_size, steps[0])
    return newest


def tier_load(args, checkpoint: tuple[int, int], state: dict) -> None:
    """Read at the world size it was saved at (where its metadata is), whatever this one's."""
    from amzn_sagemaker_checkpointing.checkpointing.filesystem.filesystem import SageMakerTieredStorageReader

    world_size, step = checkpoint
    dcp.load(state, storage_reader=SageMakerTieredStorageReader(tier_config(args, world_size), step=step))


def checkpoint_name(args, checkpoint) -> str | None:
    if checkpoint is None:
        return None
    if args.tier_namespace:
        world_size, step = checkpoint
        return f"tier:{tier_namespace(args, world_size)}/step_{step}"
    return str(checkpoint)


def samples_of_rank(position: int, rank: int, args) -> list[int]:
    """This rank's slice of the step that starts at `position` (the last step may be short)."""
    start = position + rank * args.batch_per_rank
    return list(range(start, min(start + args.batch_per_rank, args.total_samples)))


def train_step(model, optimizer, samples: list[int], batch_per_rank: int) -> float:
    """One optimizer step on features computed from the sample ids (a rank with no samples still
    takes part in DDP's gradient all-reduce)."""
    ids = torch.tensor(samples, dtype=torch.float32).unsqueeze(1)
    inputs = torch.sin(ids * torch.arange(1, FEATURES + 1) / 10)
    targets = inputs.sum(dim=1, keepdim=True) / 2
    loss = ((model(inputs) - targets) ** 2).sum() / batch_per_rank
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def train(args, model, optimizer, progress: dict, records: Records) -> None:
    rank, world_size = dist.get_rank(), dist.get_world_size()
    while progress["position"] < args.total_samples:
        samples = samples_of_rank(progress["position"], rank, args)
        loss = train_step(model, optimizer, samples, args.batch_per_rank)
        progress["step"] += 1
        consumed = world_size * args.batch_per_rank
        progress["position"] = min(progress["position"] + consumed, args.total_samples)
        records.write(step=progress["step"], world_size=world_size, samples=samples, time=time.time())
        print(f"step {progress['step']} world_size {world_size} loss {loss:.5f}")

        elastic_event = elastic_event_detected()  # a collective: every rank calls it every step
        if elastic_event or progress["step"] % args.checkpoint_every == 0:
            saved = save_checkpoint(args, model, optimizer, progress)
            records.write(event="saved", step=progress["step"], checkpoint=saved, time=time.time())
            if elastic_event:
                records.write(event="elastic", step=progress["step"], checkpoint=saved)
                print("Elastic scaling event detected. Checkpoint saved.")
                return
        time.sleep(args.step_seconds)
    records.write(event="completed", step=progress["step"])
    print(f"Training completed at step {progress['step']}.")


def run(args) -> None:
    torch.manual_seed(0)
    model = DistributedDataParallel(torch.nn.Linear(FEATURES, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    records = Records(args.checkpoint_dir, dist.get_rank())

    checkpoint = agreed_checkpoint(args)
    progress = {"step": 0, "position": 0}
    if checkpoint:
        progress = load_checkpoint(args, checkpoint, model, optimizer)
    records.write(event="started", world_size=dist.get_world_size(), step=progress["step"],
                  position=progress["position"], checkpoint=checkpoint_name(args, checkpoint))
    print(f"rank {dist.get_rank()} of {dist.get_world_size()} starts at step {progress['step']}"
          f" (checkpoint: {checkpoint})")
    train(args, model, optimizer, progress, records)


def main() -> None:
    args = parse_args()
    dist.init_process_group("gloo")  # from torchrun's environment, which the agent sets
    run(args)
    # Only once run() has returned and freed the DDP model: if DDP's reducer held the last
    # reference to the process group, it would destroy it holding the GIL, which gloo's worker
    # threads may be waiting for (the process then hangs at exit).
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
