# The two commands of the README: `make serve` and `make test`. Each sets up what it needs, and
# each set-up step runs again only when what it installs from changed (pyproject.toml, a lock file).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.kernelindex
# The CPU build of torch (the kernels extra needs torch): PyPI's Linux torch is the CUDA build
# (~5 GB with its nvidia packages), so a host without a GPU takes it from PyTorch's CPU index.
TORCH_CPU := torch==2.13.0
TORCH_CPU_INDEX := https://download.pytorch.org/whl/cpu
# One request with a 5 s timeout, before pip is told about the index: pip retries an unreachable
# index 5 times (with PIP_DEFAULT_TIMEOUT each, minutes where packets are dropped). Unreachable:
# the +cpu build from pip's configured indexes (a mirror, find-links), never the CUDA build.
TORCH_CPU_INDEX_UP := $(BIN)/python -c "import urllib.request; urllib.request.urlopen('$(TORCH_CPU_INDEX)/torch/', timeout=5).close()" 2>/dev/null
NPM_CI := npm ci --no-audit --no-fund --silent
# setuptools warns on every editable install that a folder named like a package may shadow it
# (here, that is the point): a clean log.
EDITABLE := PYTHONWARNINGS="ignore:Editable installation" $(BIN)/pip install -q -e

.PHONY: serve test lint setup setup-dev kernels bench-api bench-import bench-subscriptions bench-gateway schema clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

# torch: kept when present; else the CUDA build on a host with an NVIDIA GPU, the CPU build elsewhere.
define install_torch
	@if $(BIN)/python -c "import torch" 2>/dev/null; then :; \
	elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  echo "make: an NVIDIA GPU is present: installing the CUDA build of torch"; $(BIN)/pip install -q "torch>=2.5"; \
	elif $(TORCH_CPU_INDEX_UP); then \
	  echo "make: no NVIDIA GPU: installing the CPU build of torch from $(TORCH_CPU_INDEX)"; \
	  $(BIN)/pip install -q $(TORCH_CPU) --extra-index-url $(TORCH_CPU_INDEX); \
	else \
	  echo "make: no NVIDIA GPU, and $(TORCH_CPU_INDEX) did not answer within 5 s: installing $(TORCH_CPU)+cpu from pip's own indexes"; \
	  $(BIN)/pip install -q "$(TORCH_CPU)+cpu" || { echo "make: $(TORCH_CPU)+cpu is on none of pip's indexes either: reach $(TORCH_CPU_INDEX) (a proxy: https_proxy), or put the wheel in pip's find-links" >&2; exit 1; }; \
	fi
endef

# The editable install (code changes need no reinstall): again only when pyproject.toml changes.
$(STAMP)-installed: pyproject.toml setup.py | $(BIN)/python
	$(EDITABLE) .
	@touch $@

$(STAMP)-kernels: pyproject.toml setup.py | $(BIN)/python
	$(install_torch)
	$(EDITABLE) '.[kernels]'
	@touch $@ $(STAMP)-installed

$(STAMP)-dev: pyproject.toml setup.py | $(BIN)/python
	$(install_torch)
	$(EDITABLE) '.[dev,kernels]'
	@touch $@ $(STAMP)-kernels $(STAMP)-installed

# The pinned npm composers and Hive Gateway (what `serve` runs); again when the lock file changes.
gateway/node_modules/.package-lock.json: gateway/package-lock.json
	cd gateway && $(NPM_CI)

# GraphiQL's pinned assets, served locally by the web pages (no CDN).
web/assets/node_modules/.package-lock.json: web/assets/package-lock.json
	cd web/assets && $(NPM_CI)

setup: $(STAMP)-installed gateway/node_modules/.package-lock.json web/assets/node_modules/.package-lock.json

# What the README's controlled-rerun walkthrough needs beyond `make serve`: torch (CPU build
# where there is no GPU), numpy, matplotlib.
kernels: setup $(STAMP)-kernels

setup-dev: $(STAMP)-dev gateway/node_modules/.package-lock.json web/assets/node_modules/.package-lock.json
	@# Page tests drive Debian's Chromium headless (Playwright never downloads a browser here).
	@command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

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
	rm -rf $(VENV) gateway/node_modules web/assets/node_modules .kernelindex
