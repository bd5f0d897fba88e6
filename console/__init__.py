"""The web console: server-rendered pages over the same services and presenters as the API."""
