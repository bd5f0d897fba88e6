"""Training's data: File-mode staging of channels (`channels`) and the checkpoint sync helper
(`checkpoint_sync`, run by the shared helper launcher, jobs/sidecars.py, as the Pipe feeder is).
Part of training; may import what training may."""
