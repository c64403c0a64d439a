# The two commands of the README: `make run` (the main job) and `make test` (the suite).
# Both set up .venv first; later runs skip the install unless pyproject.toml changed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]' --config-settings editable_mode=compat
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/agentrt up

# The suite: lint and types first (cheap), then pytest (unit, workflow, end to end).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	if command -v npm >/dev/null; then (cd tests/browser && npm ci --silent --no-audit --no-fund); fi
	if command -v npm >/dev/null; then (cd tests/node && npm ci --silent --no-audit --no-fund); fi
	$(BIN)/python -m pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench substrate

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
