"""Capacity of the worker nodes: Node, Placement and GpuAllocation (app label "workers"), the
host inventory, node registration and heartbeats, the instance-type catalog, and GPU accounting
shared by training and hosting. May import: reconcile, runtime, storage, protocol."""
