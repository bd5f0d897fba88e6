"""Object storage and files: the S3 client with byte budgets, tar.gz archives, and file access that
never follows a symlink out of its directory. May import: protocol (nothing else of Sageport)."""
