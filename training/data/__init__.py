"""A training job's data paths: staging File-mode channels, and the detached helper processes
started from spec files (the Pipe-mode feeder, checkpoint sync, and their launcher, sidecars).
Part of training; may import what training may."""
