# The two commands of the README: `make serve` and `make test`. Each sets up what it needs.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The CPU build of torch that lies on this kind of machine's disk (the kernels extra needs torch).
TORCH_CPU := torch==2.13.0

.PHONY: serve test lint setup setup-dev bench-api bench-import bench-subscriptions bench-gateway schema clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

setup: $(BIN)/python gateway/node_modules/.package-lock.json
	$(BIN)/pip install -q -e .
	@# GraphiQL's pinned assets, served locally by the web pages (no CDN).
	cd web/assets && npm ci --no-audit --no-fund --silent

# The pinned npm composers and Hive Gateway (what `serve` runs); again when the lock file changes.
gateway/node_modules/.package-lock.json: gateway/package-lock.json
	cd gateway && npm ci --no-audit --no-fund --silent

setup-dev: $(BIN)/python gateway/node_modules/.package-lock.json
	@# Page tests drive Debian's Chromium headless (Playwright never downloads a browser here).
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }
	$(BIN)/pip install -q $(TORCH_CPU)
	$(BIN)/pip install -q -e '.[dev,kernels]'
	cd web/assets && npm ci --no-audit --no-fund --silent

serve: setup
	$(BIN)/kernelindex serve $(ARGS)

test: setup-dev lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# Style and layers: ruff (config in pyproject.toml) and the import-linter contracts (docs/architecture.md).
lint: setup-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-logo --no-cache

schema: setup
	$(BIN)/kernelindex export-schema > schema.graphql

bench-api: setup-dev
	$(BIN)/python bench/api.py

bench-import: setup-dev
	$(BIN)/python bench/import.py

bench-subscriptions: setup-dev
	$(BIN)/python bench/subscriptions.py

bench-gateway: setup-dev
	$(BIN)/python bench/gateway.py

clean:
	rm -rf $(VENV) gateway/node_modules .kernelindex
