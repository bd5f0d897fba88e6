"""SageMaker HyperPod clusters (app label "clusters"): CreateCluster … DescribeClusterNode over
Sageport's registered nodes, which instance groups are filled with, and `tiering` (what a node's
checkpoint tier should be). May import: capacity, accounts, reconcile, runtime, storage, protocol."""
