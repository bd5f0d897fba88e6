"""Managed tiered checkpointing with AWS's `amzn-sagemaker-checkpointing`, as a SageMaker training
script: two ranks (torchrun, gloo, CPU) train a small model with PyTorch Distributed Checkpoint.

Every step is saved with `dcp.async_save` to the in-memory tier (the node's tier service, at the
library's fixed address); every `s3_every` steps the same save also goes to S3. On start the
script resumes from the newest checkpoint the library finds (RAM first, then S3). The library
writes its log to /var/log/sagemaker_checkpointing/{namespace}_checkpointing.log (it logs at INFO,
so the script sets that level). At the end rank 0 writes /opt/ml/model/checkpointing.json: the
step it resumed from, the last step, the steps whose save the library reported done or failed
(on an S3 step it only logs a failed RAM write, and the save is done once S3 has it), the steps
sent to S3, and a digest of the final weights. A failed save does not stop training. Data and
initial weights are seeded by step and rank, so a resumed run ends with exactly the weights of
an uninterrupted one.

Hyperparameters (/opt/ml/input/config/hyperparameters.json, strings as SageMaker sends them):
  namespace     the checkpoints' namespace (default: the job's name); a later job that uses the
                same namespace resumes from it
  steps         train up to this step (default "10"); a resumed run continues after its step
  s3_base_path  "s3://bucket/prefix" for the S3 tier (default: none, RAM only)
  s3_every      also save to S3 every N steps (default "5")
  hidden        the hidden layer's width (default "64"), to make the checkpoints bigger
"""
import hashlib
import json
import logging
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from amzn_sagemaker_checkpointing.checkpointing.filesystem.exceptions import SageMakerTieredStorageError
from amzn_sagemaker_checkpointing.checkpointing.filesystem.filesystem import (
    SageMakerTieredStorageReader,
    SageMakerTieredStorageWriter,
)
from amzn_sagemaker_checkpointing.config.sagemaker_checkpoint_config import SageMakerCheckpointConfig
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel

PREFIX = Path("/opt/ml")
HYPERPARAMETERS = PREFIX / "input" / "config" / "hyperparameters.json"
SUMMARY_FILE = PREFIX / "model" / "checkpointing.json"
FAILURE_FILE = PREFIX / "output" / "failure"
NAMESPACE_PATTERN = re.compile(r"[A-Za-z0-9_-]+")  # what the library allows
FEATURES = 16
BATCH = 32

log = logging.getLogger("train")


class BadInput(Exception):
    """The job's hyperparameters cannot be used; the message is shown to the user."""


@dataclass(frozen=True)
class Settings:
    namespace: str
    steps: int
    s3_base_path: str
    s3_every: int
    hidden: int


def read_settings() -> Settings:
    raw = json.loads(HYPERPARAMETERS.read_text()) if HYPERPARAMETERS.exists() else {}
    namespace = raw.get("namespace") or os.environ.get("TRAINING_JOB_NAME", "")
    if not NAMESPACE_PATTERN.fullmatch(namespace):
        raise BadInput(f"namespace must be letters, digits, '-' and '_', got {namespace!r}")
    s3_base_path = raw.get("s3_base_path", "")
    if s3_base_path and not s3_base_path.startswith("s3://"):
        raise BadInput(f"s3_base_path must start with s3://, got {s3_base_path!r}")
    return Settings(
        namespace=namespace,
        steps=_positive_int(raw, "steps", "10"),
        s3_base_path=s3_base_path,
        s3_every=_positive_int(raw, "s3_every", "5"),
        hidden=_positive_int(raw, "hidden", "64"),
    )


def _positive_int(raw: dict, name: str, default: str) -> int:
    text = raw.get(name, default)
    if not text.isdigit() or int(text) < 1:
        raise BadInput(f"{name} must be a positive integer, got {text!r}")
    return int(text)


def make_model(hidden: int) -> torch.nn.Module:
    torch.manual_seed(0)  # every rank starts from the same weights
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1)
    )


def batch_for(step: int, rank: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A regression batch that depends only on (step, rank): a resumed run sees the same data."""
    generator = torch.Generator().manual_seed(1_000_003 * step + rank)
    inputs = torch.randn(BATCH, FEATURES, generator=generator)
    targets = inputs.sum(dim=1, keepdim=True) + 0.1 * torch.randn(BATCH, 1, generator=generator)
    return inputs, targets


def checkpoint_state(model, optimizer, step: int) -> dict:
    model_state, optimizer_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optimizer": optimizer_state, "step": step}


def newest_step(config: SageMakerCheckpointConfig) -> int | None:
    """The step the library would resume from (RAM first, then S3), or None. Asked on rank 0 and
    shared, so that every rank loads the same step: each reader without a step looks for the
    newest on its own, and `dcp.load` of an empty namespace fails rather than loading nothing."""
    found = [None]
    if dist.get_rank() == 0:
        probe = SageMakerTieredStorageReader(checkpoint_config=config)
        if probe.read_metadata().state_dict_metadata:
            found[0] = probe.step
    dist.broadcast_object_list(found, src=0)
    return found[0]


def resume(config: SageMakerCheckpointConfig, model, optimizer) -> int | None:
    step = newest_step(config)
    if step is None:
        log.info("no checkpoint in namespace %s: starting from scratch", config.namespace)
        return None
    state = checkpoint_state(model, optimizer, 0)
    dcp.load(state, storage_reader=SageMakerTieredStorageReader(checkpoint_config=config, step=step))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
    log.info("resumed from step %d", state["step"])
    return state["step"]


class Checkpointer:
    """One `dcp.async_save` in flight at a time, on a process group of its own (its collectives
    run in a background thread, beside DDP's on the default group)."""

    def __init__(self, config: SageMakerCheckpointConfig, settings: Settings):
        self.config = config
        self.settings = settings
        self.group = dist.new_group(backend="gloo")
        self.pending = None  # (step, future)
        self.saved: list[int] = []
        self.failed: list[int] = []
        self.s3_steps: list[int] = []

    def save(self, state: dict, step: int) -> None:
        # The writer reads `save_to_s3` from the shared config while it writes in the background:
        # flipping it before the previous save finished would send the wrong step to S3.
        self.wait()
        to_s3 = bool(self.settings.s3_base_path) and step % self.settings.s3_every == 0
        self.config.save_to_s3 = to_s3
        if to_s3:
            self.s3_steps.append(step)
        try:
            writer = SageMakerTieredStorageWriter(checkpoint_config=self.config, step=step)
        except SageMakerTieredStorageError as error:  # with an S3 path it asks S3 for the bucket's region
            log.warning("checkpoint of step %d not started: %s", step, error)
            writer = None
        if not self.everyone_has(writer):  # a save without every rank would never finish
            self.failed.append(step)
            return
        self.pending = (step, dcp.async_save(state, storage_writer=writer, process_group=self.group))

    def everyone_has(self, writer) -> bool:
        missing = torch.tensor([0 if writer is not None else 1])
        dist.all_reduce(missing, group=self.group)
        return missing.item() == 0

    def wait(self) -> None:
        if self.pending is None:
            return
        step, future = self.pending
        self.pending = None
        error = future.exception()
        if error is None:
            self.saved.append(step)
        else:  # training goes on; the next step's checkpoint may succeed
            log.warning("checkpoint of step %d failed: %s", step, error)
            self.failed.append(step)


def weights_digest(model: torch.nn.Module) -> tuple[str, float]:
    digest, total = hashlib.sha256(), 0.0
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
        total += float(tensor.sum())
    return digest.hexdigest(), total


def train(settings: Settings) -> dict:
    rank = dist.get_rank()
    model = DistributedDataParallel(make_model(settings.hidden))
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01)
    config = SageMakerCheckpointConfig(
        namespace=settings.namespace,
        world_size=dist.get_world_size(),
        s3_tier_base_path=settings.s3_base_path,
    )
    resumed_from = resume(config, model, optimizer)
    checkpointer = Checkpointer(config, settings)
    last_step = resumed_from or 0
    for step in range(last_step + 1, settings.steps + 1):
        inputs, targets = batch_for(step, rank)
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        log.info("step %d loss %.5f", step, loss.item())
        checkpointer.save(checkpoint_state(model, optimizer, step), step)
        last_step = step
    checkpointer.wait()
    digest, total = weights_digest(model.module)
    return {
        "namespace": settings.namespace,
        "world_size": dist.get_world_size(),
        "resumed_from_step": resumed_from,
        "last_step": last_step,
        "saved_steps": checkpointer.saved,
        "failed_steps": checkpointer.failed,
        "s3_steps": checkpointer.s3_steps,
        "weights_sha256": digest,
        "weights_sum": total,
    }


def configure_logging() -> None:
    """The library's loggers inherit the root's level and write nothing below WARNING, not even
    their log file: INFO, without a root handler, since they print to the console themselves."""
    logging.getLogger().setLevel(logging.INFO)
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter(f"%(asctime)s [rank {os.environ.get('RANK', '?')}] %(message)s"))
    log.addHandler(handler)
    log.propagate = False


def main() -> int:
    # SageMaker's `train` argument (sys.argv) needs nothing.
    configure_logging()
    try:
        settings = read_settings()
    except BadInput as error:
        if os.environ.get("RANK") == "0":
            FAILURE_FILE.write_text(f"{error}\n")
        print(error, file=sys.stderr)
        return 1
    dist.init_process_group(backend="gloo")
    try:
        summary = train(settings)
        if dist.get_rank() == 0:
            SUMMARY_FILE.write_text(json.dumps(summary, indent=2) + "\n")
            log.info("summary: %s", json.dumps(summary))
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
