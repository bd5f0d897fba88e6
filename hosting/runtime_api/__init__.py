"""The InvokeEndpoint data path (runtime.sagemaker): the middleware and view, the routing table
built from the database, and the in-process router that picks a container. Part of hosting."""
