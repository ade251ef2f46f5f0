# The front door. `make help` lists the targets; `make demo` and `make test` are the two that matter.
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
SAM_STAMP := .venv-sam/.installed

.PHONY: help demo venv lint typecheck test test-fast test-install docs bench bench-autoscale lock clean sam-venv build browser

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

# uv installs the pins (pip where it cannot), compiling no bytecode: see scripts/install-pins, and the README for
# what it saves a fresh clone's `make demo`.
$(STAMP): requirements/dev.lock pyproject.toml
	scripts/install-pins $(VENV) requirements/dev.lock .
	@touch $(STAMP)

# The suite starts hundreds of interpreters, and where no bytecode is written (PYTHONDONTWRITEBYTECODE, as on the dev
# box) each would compile what it imports again: every package's bytecode, once, as pip compiled it at install. A
# file a package ships that does not compile (a test data file, another Python's syntax) is left, as pip leaves it.
COMPILED := $(VENV)/.compiled
$(COMPILED): $(STAMP)
	$(PY) -m compileall -qq -j0 "$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
	@touch $(COMPILED)

venv: $(STAMP) ## create .venv with a Python 3.13 it finds and the pinned dependencies

lint: $(STAMP) ## ruff
	$(VENV)/bin/ruff check .

typecheck: $(STAMP) ## mypy on the package
	$(VENV)/bin/mypy layers/core/rebalancer tools/rebalancer_tools

demo: $(STAMP) ## the whole controller end to end on the emulator (127.0.0.1 only); report in demo-out/
	$(PY) -m rebalancer_tools demo --out demo-out

# Two processes where there are two cores (pytest-xdist, `-n auto`), a test file each (`--dist loadfile`): the
# suite is CPU-bound, and a file's module-scoped fixtures (a deployed stack, a built layer) are then built once, not
# once per worker. `/usr/bin/time .venv/bin/python -m pytest -q -n auto --dist loadfile` on the shared 2-core dev
# box at load 0.9-2.9: 3,119 tests in 297 s wall, 478+33 s CPU (before this round's speed-ups, in one process:
# 3,110 tests in 716 s wall, 644+64 s CPU at load 0-1); docs/internals/contributing.md names the slowest. No test depends on the
# terminal's width (tests/conftest.py unsets COLUMNS, which the workers set). `make test PYTEST_ARGS="-n 0"` runs it
# in one process.
test: lint typecheck $(SAM_STAMP) $(COMPILED) browser ## lint, type-check and run every test (unit, integration, e2e)
	$(PY) -m pytest -q -n auto --dist loadfile $(PYTEST_ARGS)

# Needs the package index (CI has it): the wheel with [tools] and the tested pins into fresh virtualenvs of each
# supported Python, each running a plan, the sandbox (stopped by SIGINT) and the demo; `make test` checks the same
# wheel offline against .venv. About two minutes per Python.
test-install: $(STAMP) ## the laptop install on Python 3.11, 3.12 and 3.13: the wheel, its [tools] extra, dev.lock's pins
	$(PY) scripts/test_install.py 11 12 13

# The reference lives in a docs site (mkdocs.yml, docs/; the README is its home page): `strict: true` makes every
# warning (a broken link or anchor, a page left out of the nav) an error. CI runs it (.ci/run). Material for MkDocs
# prints a notice about its successor on every build; NO_MKDOCS_2_WARNING silences that notice only.
docs: $(STAMP) ## build the docs site into .site/ (mkdocs-material, warnings are errors); `.venv/bin/mkdocs serve` to write
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build

# The approval page's browser tests drive Debian's chromium through Playwright (no browser download of its own).
# About 70 s the first time (apt-get update + install, measured on the dev machine); nothing after that.
browser: ## install Debian's chromium for the browser tests if it is missing (needs root, as CI has)
	@command -v chromium >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }

# One process: the emulator, the backtest search and what spawns interpreters live in tests/integration and
# tests/infra, and `-n 2` would pay the collecting and importing twice.
# Plugins named, not autoloaded, as for every run (pyproject.toml's addopts says why). Examples at a tenth, 10
# at least and never more than `make test` runs; whole simulations and multi-day replays are in tests/integration.
# `/usr/bin/time -f '%e s wall, %U+%S s CPU' make test-fast` on the shared 2-core dev box, 1,845 tests: 28.0 s wall,
# 27.9 s CPU at load 0.3-0.6; 28.2 s, 27.8 s at load 1.2-1.5.
test-fast: $(COMPILED) ## unit tests only, property and fuzz tests at a tenth of their examples (make test runs all)
	PROPERTY_EXAMPLES_DIVISOR=10 $(PY) -m pytest -q tests/unit

bench: $(STAMP) $(SAM_STAMP) ## planning, a plan's basis and recheck, the plan step's outlook, layer size and cold imports, `/rebalancer why` against Slack's 3 s, backtest, a burst of events, collect's calls, an alarm's metrics, the reservation check, `simulate`'s default run against the strategies' own simulations
	$(PY) benchmarks/plan_bench.py
	$(PY) benchmarks/recheck_bench.py
	$(PY) benchmarks/outlook_bench.py
	$(PY) benchmarks/lambda_bench.py
	$(PY) benchmarks/why_bench.py
	$(PY) benchmarks/backtest_bench.py
	$(PY) benchmarks/burst_bench.py
	$(PY) benchmarks/collect_bench.py
	$(PY) benchmarks/trigger_bench.py
	$(PY) benchmarks/reservations_bench.py
	$(PY) benchmarks/simulate_bench.py

bench-sim: $(STAMP) ## the five simulator scenarios (Philly 512, 1024, 1024 + failures; synthetic overloaded, GPU + Trainium) × four strategies; tables and goals into docs/simulation.md
	$(PY) -m rebalancer_tools.simulator.bench --trace ../shared/traces/philly-vc/jobs.csv --doc docs/simulation.md --workers 2

bench-autoscale: $(STAMP) ## an autoscaled pool (Philly 64->128 and synthetic overloaded 16->32 p5 nodes): waiting and node-hours when quotas are planned to the autoscaler's ceiling vs to the nodes present; table into docs/simulation.md
	$(PY) -m rebalancer_tools.simulator.autoscale_bench --trace ../shared/traces/philly-vc/jobs.csv --doc docs/simulation.md --workers 1

# A re-pin resolves for the Python that runs it (3.13): the lines for Python 3.11 (numpy, contourpy and networkx,
# marked `; python_version < "3.12"`) are not made by it and must be put back by hand; the constraints test
# (tests/unit/test_install_constraints.py) fails until they are, and `make test-install` installs them on 3.11.
lock: ## re-pin requirements/dev.lock from requirements/dev.in (needs the network)
	rm -rf .venv-lock && "$$(scripts/find-python 13)" -m venv .venv-lock
	.venv-lock/bin/pip install --quiet -r requirements/dev.in
	.venv-lock/bin/pip freeze --exclude-editable > requirements/dev.lock && rm -rf .venv-lock

$(SAM_STAMP): requirements/sam.lock
	scripts/install-pins .venv-sam requirements/sam.lock
	@touch $(SAM_STAMP)

sam-venv: $(SAM_STAMP) ## aws-sam-cli in its own .venv-sam (its pins clash with .venv); about 75 s the first time

build: $(SAM_STAMP) ## sam build (needs python3.13 on PATH; found by scripts/find-python)
	PATH="$$(dirname $$(scripts/find-python 13)):$$PATH" SAM_CLI_TELEMETRY=0 .venv-sam/bin/sam build

clean: ## remove the virtualenv and caches
	rm -rf $(VENV) .venv-sam .pytest_cache .mypy_cache .ruff_cache .hypothesis .aws-sam .site
