"""Schema migrations of this app (its label, not its package name, identifies them)."""
