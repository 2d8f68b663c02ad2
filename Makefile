# The commands a user and CI run. `make setup` is idempotent: it creates .venv once and
# reinstalls only when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup test lint typecheck pytest demo mutation bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

lint: setup
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: setup
	$(BIN)/mypy src

pytest: setup
	$(BIN)/pytest -q

test: lint typecheck pytest

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache .hypothesis .mutmut-cache

# Mutation testing of the attention core (mutmut) plus the seed's named pitfalls.
mutation: setup
	$(BIN)/python scripts/mutation.py
