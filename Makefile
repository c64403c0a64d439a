# The two commands of the README: `make run` (the main job) and `make test` (the suite).
# Both set up .venv first; later runs skip the install unless pyproject.toml changed.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-quick lint typecheck bench clean

# pytest-xdist workers of `make test` and `make test-quick` (README, Tests): each has its
# own Temporal servers, temporary directories and databases. 0: one process, in order.
# Tests go out one at a time, slowest kinds first (tests/conftest.py orders them), so no
# worker ends the run on a long test alone; a module whose tests share one `agentrt up`
# goes to one worker whole (SHARED_STACK_MODULES in tests/conftest.py). 6 workers keep both cores busy while tests
# wait on processes they started (clean-clone .ci/run on 2026-12-05: 6 min 57 s against
# 7 min 19 s on 4 and 30 % idle CPU; 4 gave 11 min against 13 on 2 the month before).
PYTEST_WORKERS ?= 6
PYTEST_DIST = --dist load --maxschedchunk 1
# `make test-quick` has no process to wait on: 3 workers do best there (each worker
# collects the whole suite, a few seconds of CPU).
QUICK_WORKERS ?= 3
# Every run shows where the time goes.
PYTEST_ARGS ?= --durations=25
# The suite's processes keep their bytecode (`__pycache__`, git-ignored) even where the
# environment says not to (PYTHONDONTWRITEBYTECODE, set on this machine): each xdist worker
# would otherwise rewrite every test module's asserts again (about 5 s of CPU), and every
# `agentrt up`, API and worker process a test starts would compile the project again.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

# A plain editable install (PEP 660): mypy and the tests resolve the project's packages
# from the source tree, so setuptools' deprecated `editable_mode=compat` is not needed.
# pip stays quiet (its build chatter is noise), and so does setuptools' informational note
# on editable installs; the lines before it say what it installs.
$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@$(BIN)/python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
	names = [d.split('>')[0].split('<')[0].split('[')[0] for d in p['dependencies'] + p['optional-dependencies']['dev']]; \
	print('installing agentrt (editable) and its dependencies into $(VENV); the first time takes a minute or two:'); \
	print('  ' + ', '.join(names))"
	$(BIN)/python -m pip install --quiet --upgrade pip
	PYTHONWARNINGS=ignore::UserWarning:setuptools.command.editable_wheel \
	  $(BIN)/python -m pip install --quiet -e '.[dev]'
	@echo "$(VENV) is ready"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/agentrt up

# The suite: lint and types first (cheap), then pytest (unit, workflow, end to end).
test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	if command -v npm >/dev/null; then (cd tests/browser && npm ci --silent --no-audit --no-fund); fi
	if command -v npm >/dev/null; then (cd tests/node && npm ci --silent --no-audit --no-fund); fi
	if command -v npm >/dev/null; then (cd tests/mcp_servers && npm ci --silent --no-audit --no-fund); fi
	$(PYTEST) -q -n $(PYTEST_WORKERS) $(PYTEST_DIST) $(PYTEST_ARGS)

# The inner loop: lint, types, and every test that starts no Temporal dev server and no
# `agentrt up` (unit, policy, store, workflow tests on the time-skipping server).
test-quick: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(PYTEST) -q -n $(QUICK_WORKERS) $(PYTEST_DIST) -m "not stack" $(PYTEST_ARGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python -m bench substrate

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
