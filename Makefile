# Two commands for a new user: `make demo` and `make test`. Everything else is here for developers.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
# The interpreter itself rather than a shim in front of it (pyenv): uv replaces a virtualenv whose interpreter is not
# the one it is given, so a shim's path would rebuild the whole environment at every sync.
PYTHON_EXE = $(shell $(PYTHON) -c 'import sys; print(sys.executable)')
# uv installs the workspace (every distribution, editable) from uv.lock; it is itself pinned and bootstrapped here.
UV_VERSION := 0.13.9
UV_HOME := var/tools/uv-$(UV_VERSION)
UV := $(UV_HOME)/bin/uv
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-compiled
MEMBERS := shared services/coordinator services/worker services/bounds-cache services/invalidator services/api dev

.PHONY: install system-deps demo test test-unit lint up down status bench chaos clean images test-containers

# Bytecode for the members' editable sources, on every run (and so before `make test`, `make demo`, ...): compileall
# rewrites only what is missing or older than its source, in well under a second when nothing changed. Without it,
# where PYTHONDONTWRITEBYTECODE is set (as in CI) every process compiles every module it imports, every time:
# seconds of start-up for each `cbt` command and service. compileall writes even where that variable is set.
install: $(STAMP)
	$(BIN)/python -m compileall -q $(MEMBERS)

$(UV):
	$(PYTHON) -m venv $(UV_HOME)
	$(UV_HOME)/bin/pip install -q --disable-pip-version-check uv==$(UV_VERSION)

# One virtualenv, every workspace member installed editable (plain .pth paths, no import hooks), exactly as locked;
# its packages compiled to bytecode at the sync (the stamp is named for that: a virtualenv synced without it is synced
# once more).
$(STAMP): $(UV) pyproject.toml uv.lock $(addsuffix /pyproject.toml,$(MEMBERS))
	UV_PROJECT_ENVIRONMENT=$(VENV) $(UV) sync --frozen --all-packages --compile-bytecode --python $(PYTHON_EXE)
	touch $@

# Java 17, Maven (fetches the Kafka jars) and Debian's redis-server, installed when missing.
system-deps:
	@bash deploy/local/install-system-deps.sh

# Runs until Ctrl-C; e.g. `make demo DEMO_ARGS="--duration 120"` or DEMO_ARGS=--no-reset (see --help).
demo: install system-deps
	$(BIN)/python -m cbt.dev.demo $(DEMO_ARGS)

test: install system-deps
	$(BIN)/pytest

test-unit: install
	$(BIN)/pytest tests/unit

# ruff; mypy --strict and basedpyright (every import resolves) over the tree as it is; deptry: each distribution
# declares the third-party packages it imports (tests/unit/test_distributions.py checks the cbt namespace's portions);
# import-linter: the layer contract (.importlinter); the docs site (mkdocs.yml) builds with every link resolving.
lint: install
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/basedpyright
	@for m in $(MEMBERS); do echo "deptry $$m"; (cd $$m && $(CURDIR)/$(BIN)/deptry .) || exit 1; done
	$(BIN)/hadolint deploy/docker/*.Dockerfile deploy/docker/base/*.Dockerfile
	$(BIN)/lint-imports
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir var/site

# Every image (cbt/<service>, cbt/spark, cbt/kafka, cbt/redis), offline from fetched wheels and jars; needs a Docker
# engine (deploy/docker/engine.sh start). CBT_IMAGE_BASES=official builds on the registry's base images instead.
images: install system-deps
	bash deploy/docker/build.sh

# The container suite: the compose stack (pipeline vs oracle, scaled workers killed and stopped) and the test fixtures
# on testcontainers; builds the images first (cached).
test-containers: images
	CBT_CONTAINER_TESTS=1 $(BIN)/pytest -m containers tests/containers

up: install system-deps
	$(BIN)/cbt dev up

down:
	$(BIN)/cbt dev down

status:
	$(BIN)/cbt dev status

# Overhead vs direct Spark statements, cascade latency, backfill throughput; writes bench/reports/latest.json.
bench: install system-deps
	$(BIN)/python -m bench.run

# The long e2e suite (a Spark standalone cluster, its worker and executor killed mid-task), then randomized faults
# on the real stack and the oracle checks; CHAOS_ARGS="--rounds 50 --seed 7" replays a run.
chaos: install system-deps
	CBT_LONG_TESTS=1 $(BIN)/pytest -m long tests/e2e
	$(BIN)/python -m tests.chaos $(CHAOS_ARGS)

clean: down
	rm -rf var
