"""What the TensorFlow and PyTorch variants share: the job's parameters (`config`), where a process
sits in the job (`launch_env`), the rank layouts (`layout`), the communication groups and rank
types (`groups`) and the MPI-basics functions over a variant's state (`ranks`). Nothing here
imports a framework."""
