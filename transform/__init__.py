"""Batch transform (in progress): the data path's rules as SageMaker documents them, pure Python.

`records` splits an input object into records (SplitType, CompressionType), `batching` packs them
into request payloads (BatchStrategy, MaxPayloadInMB), `assembly` writes the answers back in input
order (AssembleWith), `jsonpath` and `filters` apply DataProcessing (InputFilter, JoinSource,
OutputFilter). No models, API or reconciler yet: those build on the shared container-job layer."""
