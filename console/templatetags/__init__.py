"""Template filters of the console's pages."""
