"""What every container job shares (training now; processing and batch transform next): who a
job is on the engine, the disk and in CloudWatch (`identity`), its instances' fixed addresses,
staging S3 inputs into a host's directories, the per-host workspace and its config files, the
container spec and world, phase deadlines, log collection, packing and uploading output
directories, and the stop sequence. Functions parameterised by the job's kind, never a feature's
rows: a feature builds a `JobIdentity` from its own. May import: gateway, logs, capacity,
accounts, reconcile, runtime, storage, protocol; never a feature (the Django app label `jobs` is
training's, for history, and unrelated to this package)."""
