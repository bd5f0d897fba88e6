"""What the TensorFlow and PyTorch variants share: the job's parameters (`config`), where a process
sits in the job (`launch_env`), the rank layouts (`layout`), the communication groups and rank
types (`groups`), the MPI-basics functions over a variant's state (`ranks`), smp.init()'s
once-only state (`state`), and smp.step's decorated function, argument splitting, output
merging, step context and StepOutput basics (`structure`, `step_context`, `step_output`).
Nothing here imports a framework."""
