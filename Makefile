# Sageport's entry points. Each target installs what is missing first (scripts/bootstrap.sh).
VENV := .venv

.PHONY: help bootstrap run up down node clean images images-all sdk-v3 hyp test lint docs

## help: this list (the default target); `.venv/bin/sageport` lists the operator's commands
help:
	@awk '/^## [a-z0-9, /-]+:/ { print ""; print "  " substr($$0, 4); next } /^## / { print "      " substr($$0, 4) }' $(firstword $(MAKEFILE_LIST))

bootstrap:
	@scripts/bootstrap.sh

## run: the whole stack in the foreground on 127.0.0.1 (Ctrl-C stops it)
run: bootstrap
	$(VENV)/bin/python manage.py runstack

## up / down: the same stack in the background
up: bootstrap
	@scripts/up.sh

down:
	@scripts/down.sh

## node: one more worker node on this host for an installation running elsewhere; needs
## DATABASE_URL, SAGEPORT_REDIS_URL, SAGEPORT_S3_ENDPOINT_URL, SAGEPORT_API_URL,
## SAGEPORT_NODE_NAME and SAGEPORT_NODE_ADDRESS (docs/operations.md, "Adding a node")
node: bootstrap
	$(VENV)/bin/python manage.py runnode

## clean: stop the stack, then remove this installation's containers and networks (by their
## sageport.stack label) and its data directory (docs/operations.md, "Uninstall")
clean: down
	$(VENV)/bin/python manage.py uninstall

## images: the quick start's example images, built locally (no registry): busybox, python (training),
## python-serve (an endpoint); IMAGES='python-stream sagemaker-training' builds those instead
## images-all: every example image (script mode, MPI, the HyperPod ones: torch is GBs, downloaded once)
QUICK_START_IMAGES := busybox python python-serve
IMAGES ?= $(QUICK_START_IMAGES)
images: bootstrap
	@scripts/build-images.sh $(IMAGES) >/dev/null

images-all: bootstrap
	@scripts/build-images.sh >/dev/null

## sdk-v3: the SageMaker SDK v3 in .venv-sdk-v3, a link to one per machine (v2, in .venv, has the same package name)
sdk-v3: bootstrap
	@scripts/sdk-v3-venv.sh >/dev/null

## hyp: AWS's HyperPod CLI in its own virtualenv (scripts/hyp-venv.sh), for its end-to-end test
hyp: bootstrap
	@scripts/hyp-venv.sh >/dev/null

## test: the whole test suite; it starts and stops its own services on free ports
test: bootstrap images-all sdk-v3 hyp
	$(VENV)/bin/pytest

## lint: ruff, and the import layers (pyproject [tool.importlinter]; docs/architecture.md)
lint: bootstrap
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

## docs: the documentation (docs/, mkdocs.yml) built into a browsable site in site/ (MkDocs, Material)
docs: bootstrap
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

## bench-invoke, bench-stream, bench-multi-model, bench-serverless, bench-api, bench-job-lifecycle, bench-staging, bench-tier, bench-elastic, bench-transform, bench-pipeline: one benchmark
## (bench/<name>.py) against the stack of `make up`, started first when it is not running and left
## running (`make down` stops it); ARGS='--requests 500' passes options (docs/performance.md)
BENCHES := bench-invoke bench-stream bench-multi-model bench-serverless bench-api bench-job-lifecycle bench-staging bench-tier bench-elastic bench-transform bench-pipeline
.PHONY: $(BENCHES)
$(BENCHES): bench-%: images-all up
	. "$${SAGEPORT_DATA_DIR:-.sageport}/env" && $(VENV)/bin/python -m bench.$(subst -,_,$*) $(ARGS)

## bench-stream-relay: InvokeEndpointWithResponseStream's relay alone, in process, against reading
## the same loopback token stream directly (bench/stream_relay.py); needs no stack
.PHONY: bench-stream-relay
bench-stream-relay: bootstrap
	DJANGO_SETTINGS_MODULE=tests.settings $(VENV)/bin/python -m bench.stream_relay $(ARGS)

## bench-modelparallel: pipeline parallelism's parameter bytes per rank and step time (P = 1, 2, 4)
## against single-process training, on the CPU (bench/modelparallel.py); needs no stack
.PHONY: bench-modelparallel
bench-modelparallel: bootstrap
	$(VENV)/bin/python -m bench.modelparallel $(ARGS)

## bench-overlay: a job's overlay network encrypted (SAGEPORT_OVERLAY_ENCRYPTED) against a plain one,
## throughput and round trips between two engines in network namespaces (bench/overlay.py); needs
## root, no stack
.PHONY: bench-overlay
bench-overlay: bootstrap
	$(VENV)/bin/python -m bench.overlay $(ARGS)
