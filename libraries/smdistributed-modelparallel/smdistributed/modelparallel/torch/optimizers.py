"""smp.optimizers: SageMaker's wrappers of apex's fused optimizers, not implemented here."""

from .unsupported import optimizer_class

FusedNovoGrad = optimizer_class("smp.optimizers.FusedNovoGrad", "apex's fused NovoGrad")
FusedLamb = optimizer_class("smp.optimizers.FusedLamb", "apex's fused LAMB")
