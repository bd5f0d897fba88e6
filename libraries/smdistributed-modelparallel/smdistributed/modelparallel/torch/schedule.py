"""SageMaker's pipeline schedules: the order in which one stage runs the forward ("F") and
backward ("B") passes of a step's microbatches.

- `simple`: every forward pass, then every backward pass (GPipe).
- `interleaved` (SageMaker's default): a stage runs as many forward passes as there are stages
  after it, then alternates one forward and one backward pass (1F1B), which frees each
  microbatch's activations as early as possible, then runs the backward passes left.

Backward passes run in microbatch order, so that every stage receives gradients in the order
the next stage sends them.
"""

FORWARD, BACKWARD = "F", "B"


def actions(pipeline, stage, stages, microbatches):
    """The (kind, microbatch) actions of `stage` (0-based) of `stages`, in order."""
    if pipeline == "simple":
        return [(FORWARD, mb) for mb in range(microbatches)] + [(BACKWARD, mb) for mb in range(microbatches)]
    warmup = min(stages - 1 - stage, microbatches)
    order = [(FORWARD, mb) for mb in range(warmup)]
    for mb in range(microbatches - warmup):
        order += [(FORWARD, warmup + mb), (BACKWARD, mb)]
    order += [(BACKWARD, mb) for mb in range(microbatches - warmup, microbatches)]
    return order
