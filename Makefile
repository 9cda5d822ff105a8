# Every target creates or refreshes .venv (re-installing when pyproject.toml changes).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the package and every Python package the test suite uses (the `dev` extra: test, spark, browser, docs, lint)
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test bench docs clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	touch $(STAMP)

$(DEV_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(DEV_STAMP)

demo: $(STAMP)
	$(BIN)/extracteval demo

# the whole suite, as CI runs it: with every Python package installed, a missing one fails a test
# instead of skipping it; tests that need a system package (Java, Chromium, PostgreSQL) skip
# without it, naming the Debian package to install; two worker processes (pytest-xdist), one per core
test: $(DEV_STAMP)
	EXTRACTEVAL_WHOLE_SUITE=1 $(BIN)/python -m pytest -q -n 2

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	$(BIN)/python bench/run.py

# the documentation site (MkDocs + Material, API pages from docstrings) into site/; `mkdocs serve` to read it live
docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/python -m mkdocs build --strict

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info .pytest_cache site
