"""The container runtime seam: the `ContainerRuntime` interface and its value types (base) and the
Docker engine implementation (docker). May import: protocol (nothing else of Sageport)."""
