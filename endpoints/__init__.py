"""Hosting: models, endpoint configs, endpoints and InvokeEndpoint."""
