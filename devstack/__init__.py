"""The development stack: the embedded supervisor behind `manage.py runstack` (API, worker, beat,
Redis, SeaweedFS on 127.0.0.1). May import: controlplane and every package below it."""
