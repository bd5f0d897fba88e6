"""smp.save_checkpoint / smp.resume_from_checkpoint: SageMaker's checkpoint folders (v1.10+).

Every rank calls both (the tag must be the same everywhere). Under `path`:
- partial: `{tag}_partial/` holds `model_{pp_rank}_{tp_rank}.pt` (the model's local_state_dict)
  and `optimizer_{pp_rank}_{tp_rank}.pt` (the optimizer's local_state_dict), written by the
  ranks of DP replica 0, and `user_content.pt`; only the layout that saved can resume from it.
- full: the file `{tag}` is the whole model's state_dict, a plain torch one (loadable without the
  library), `{tag}_optimizer` the optimizer's full state dict, `user_content_{tag}` the user
  content; written by global rank 0.
- `newest`: the tag of the last checkpoint written, which resume_from_checkpoint reads when given
  no tag.
resume_from_checkpoint loads into this process's DistributedModel and DistributedOptimizer (the
latest created of each) and returns the user content. The options of sharded data parallelism
and of Hugging Face translation (`translate_if_full`, `load_sharded_optimizer_state`) have
nothing to act on here; a `translate_function` raises NotImplementedError.
"""

import shutil
from pathlib import Path

import torch

from . import registry
from .api import tp_rank
from .comm import barrier
from .state import state
from .unsupported import fail

NEWEST = "newest"


def save_checkpoint(path, tag, partial=True, model=None, optimizer=None, user_content=None,
                    translate_if_full=True, num_kept_partial_checkpoints=None):
    folder = Path(path)
    current = state()
    if current.rank == 0:
        folder.mkdir(parents=True, exist_ok=True)
    barrier()
    if partial:
        _save_partial(folder, tag, model, optimizer, user_content)
    else:
        _save_full(folder, tag, model, optimizer, user_content)
    barrier()
    if current.rank == 0:
        (folder / NEWEST).write_text(tag)
        if partial and num_kept_partial_checkpoints:
            _remove_old_partials(folder, num_kept_partial_checkpoints)
    barrier()


def resume_from_checkpoint(path, tag=None, partial=True, strict=True, load_optimizer=True,
                           load_sharded_optimizer_state=True, translate_function=None):
    if translate_function is not None:
        fail("smp.resume_from_checkpoint(translate_function=...)", "translating other checkpoint formats")
    folder = Path(path)
    tag = tag if tag is not None else _newest(folder)
    if not registry.models():
        raise RuntimeError("resume_from_checkpoint needs an smp.DistributedModel, created before it")
    model = registry.models()[-1]
    optimizer = registry.optimizers()[-1] if registry.optimizers() else None
    if partial:
        partial_folder = folder / f"{tag}_partial"
        model.load_state_dict(_load(partial_folder / f"model_{_rank_suffix()}.pt"), strict=strict)
        if load_optimizer and optimizer is not None:
            optimizer.load_state_dict(_load(partial_folder / f"optimizer_{_rank_suffix()}.pt"))
        content = partial_folder / "user_content.pt"
    else:
        model.load_state_dict(_load(folder / tag), strict=strict)
        if load_optimizer and optimizer is not None:
            optimizer.load_state_dict(_load(folder / f"{tag}_optimizer"))
        content = folder / f"user_content_{tag}"
    return _load(content) if content.exists() else None


def _save_partial(folder, tag, model, optimizer, user_content):
    current = state()
    partial_folder = folder / f"{tag}_partial"
    model_state = model.local_state_dict() if model is not None else None
    optimizer_state = optimizer.local_state_dict() if optimizer is not None else None
    if current.rank == 0:
        partial_folder.mkdir(exist_ok=True)
        torch.save(user_content, partial_folder / "user_content.pt")
    barrier()
    if current.dp_rank == 0:
        if model_state is not None:
            torch.save(model_state, partial_folder / f"model_{_rank_suffix()}.pt")
        if optimizer_state is not None:
            torch.save(optimizer_state, partial_folder / f"optimizer_{_rank_suffix()}.pt")


def _save_full(folder, tag, model, optimizer, user_content):
    # state_dict() of either gathers over the MP group: every rank takes part
    model_state = model.state_dict() if model is not None else None
    optimizer_state = optimizer.state_dict() if optimizer is not None else None
    if state().rank != 0:
        return
    if model_state is not None:
        torch.save(model_state, folder / tag)
    if optimizer_state is not None:
        torch.save(optimizer_state, folder / f"{tag}_optimizer")
    torch.save(user_content, folder / f"user_content_{tag}")


def _remove_old_partials(folder, kept):
    partials = sorted(folder.glob("*_partial"), key=lambda p: p.stat().st_mtime)
    for old in partials[:-kept]:
        shutil.rmtree(old)


def _rank_suffix():
    return f"{state().mp_rank}_{tp_rank()}"


def _newest(folder):
    newest = folder / NEWEST
    if not newest.exists():
        raise FileNotFoundError(f"no checkpoint to resume from: {newest} does not exist (give a tag)")
    return newest.read_text().strip()


def _load(path):
    if not path.exists():
        raise FileNotFoundError(f"the checkpoint file {path} does not exist")
    return torch.load(path, map_location=state().device, weights_only=False)
