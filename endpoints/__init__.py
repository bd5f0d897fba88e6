"""Hosting: models, endpoint configs, endpoints and InvokeEndpoint (being built; issue 3)."""
