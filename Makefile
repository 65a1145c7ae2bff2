# Two commands on a fresh machine: `make demo` and `make test`. Both create .venv.
# The demo installs mailslot alone ($(RUNTIME)); everything else also installs the dev
# tools (test runners, linters, the browser driver, database and crypto extras: $(STAMP)).
PYTHON  ?= python3
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
RUNTIME := $(VENV)/.installed-runtime

.PHONY: demo test test-hosts test-pg lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(RUNTIME): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $(RUNTIME)

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(RUNTIME)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" KEEP="$(KEEP)" bash scripts/demo.sh

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests bench scripts
	$(VENV)/bin/mypy

test: lint
	$(PY) -m pytest -q

# The real host CLIs (tests/hosts/README.md). HOSTS=latest: their newest versions.
HOSTS ?= pinned
test-hosts: $(STAMP)
	MAILSLOT_HOSTS=$(HOSTS) MAILSLOT_HOSTS_BIN="$$($(PY) tests/hosts/install_hosts.py $(if $(filter latest,$(HOSTS)),--latest))" \
		$(PY) -m pytest -v tests/hosts

# the heavy PostgreSQL checks (8 processes x 200 sends, SIGKILLed writers): about a minute
test-pg: $(STAMP)
	$(PY) -m pytest -q -m heavy

bench: $(STAMP)
	$(PY) bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
