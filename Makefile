# Two commands for a new user: `make demo` and `make test`. Everything else is here for developers.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install system-deps demo test test-unit lint typecheck-view up down status bench clean

install: $(STAMP)

# The virtualenv holds the pinned Python dependencies (requirements.lock constrains every transitive one).
$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -U pip
	$(BIN)/pip install -q --disable-pip-version-check -c requirements.lock -e '.[dev]'
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

# mypy needs the installed layout (cbt -> shared/, cbt.services.<name> -> services/<name>/): a symlink view.
typecheck-view:
	@rm -rf var/typecheck && mkdir -p var/typecheck/cbt/services
	@for f in shared/*; do ln -s "$(CURDIR)/$$f" var/typecheck/cbt/; done
	@for f in services/*; do n=$$(basename $$f); ln -s "$(CURDIR)/$$f" "var/typecheck/cbt/services/$${n//-/_}"; done

lint: install typecheck-view
	$(BIN)/ruff check .
	$(BIN)/mypy -p cbt

up: install system-deps
	$(BIN)/cbt dev up

down:
	$(BIN)/cbt dev down

status:
	$(BIN)/cbt dev status

# Overhead vs direct Spark statements, cascade latency, backfill throughput; writes bench/reports/latest.json.
bench: install system-deps
	$(BIN)/python -m bench.run

clean: down
	rm -rf var
