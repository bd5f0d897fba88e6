"""The web console: sign-in, account scoping, and its actions going through the API services."""
