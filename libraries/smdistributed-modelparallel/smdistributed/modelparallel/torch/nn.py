"""smp.nn: SageMaker's tensor-parallel and fused modules, none of them implemented here."""

from .unsupported import module_class

_TP = "tensor parallelism"
DistributedLinear = module_class("smp.nn.DistributedLinear", _TP)
DistributedEmbedding = module_class("smp.nn.DistributedEmbedding", _TP)
DistributedTransformerLMHead = module_class("smp.nn.DistributedTransformerLMHead", _TP)
DistributedTransformer = module_class("smp.nn.DistributedTransformer", _TP)
DistributedTransformerLayer = module_class("smp.nn.DistributedTransformerLayer", _TP)
DistributedAttentionLayer = module_class("smp.nn.DistributedAttentionLayer", _TP)
DistributedTransformerOutputLayer = module_class("smp.nn.DistributedTransformerOutputLayer", _TP)
FlashAttentionLayer = module_class("smp.nn.FlashAttentionLayer", "fused flash attention kernels")
FusedLayerNorm = module_class("smp.nn.FusedLayerNorm", "apex's fused layer norm")
