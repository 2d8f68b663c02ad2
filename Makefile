# The commands a user and CI run. `make setup` is idempotent: it creates .venv once and
# reinstalls only when pyproject.toml or constraints.txt changes. `make demo` installs the core
# alone (what luong train, translate and eval need); `make setup` and everything that tests
# install the dev extra (every extra, the test and lint tools) on top. torch comes as the exact
# version of constraints.txt, this machine's CPU build. --no-compile: a module is compiled when
# it is first imported, not all of torch's thousands at install (minutes on a busy machine).
PYTHON ?= python3
# pytest's worker processes (pytest-xdist), each taking whole test files: the suite is mostly
# single-threaded (one torch thread a process), so two workers use a 2-core machine's cores.
PYTEST_WORKERS ?= 2
VENV := .venv
BIN := $(VENV)/bin
CORE := $(VENV)/.installed-core
PO := $(VENV)/.installed-po
DEV := $(VENV)/.installed-dev
PIP_INSTALL := $(BIN)/python -m pip install -q --no-compile --disable-pip-version-check \
    -c constraints.txt

.PHONY: setup test lint typecheck pytest demo demo-translation mutation bench bench-large joeynmt clean \
    joeynmt-transformer-equal joeynmt-transformer-small joeynmt-transformer-plot

setup: $(DEV)

$(CORE): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -e .
	touch $(CORE)

# The core with the po extra (polib: luong corpus and luong po), for demo-translation.
$(PO): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -e '.[po]'
	touch $(PO) $(CORE)

# The dev extra holds the core and po: once it is installed, their stamps are current too.
$(DEV): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) -e '.[dev]'
	touch $(DEV) $(PO) $(CORE)

lint: setup
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts

typecheck: setup
	$(BIN)/mypy src

# Bytecode is written for the test run even where the environment says not to
# (PYTHONDONTWRITEBYTECODE=1, as some sandboxes set): the suite starts many processes that
# import torch, and without cached bytecode each compiles it again (8 s instead of 4 per
# process here; with torch._dynamo, which an optimizer loads, 19.5 s instead of 7.5). The 30
# slowest tests are listed at the end.
pytest: setup
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -q -n $(PYTEST_WORKERS) --dist loadfile --durations=30

test: lint typecheck pytest

clean:
	rm -rf $(VENV) runs .pytest_cache .mypy_cache .ruff_cache .hypothesis .mutmut-cache

# Mutation testing of the attention core (mutmut) plus the seed's named pitfalls.
mutation: setup
	$(BIN)/python scripts/mutation.py

# The main job: train the dates model, print its test exact match, translate five dates.
DEMO_OUT ?= runs/dates
demo: $(CORE)
	$(BIN)/luong train dates --out $(DEMO_OUT)
	@printf '%s\n' "Monday, March 5, 1979" "3 May 1979" "12.10.21" "August 17, 2031" "5/4/09" > $(DEMO_OUT)/samples.txt
	@echo "five sample dates:"
	@$(BIN)/luong translate $(DEMO_OUT) --input $(DEMO_OUT)/samples.txt | paste $(DEMO_OUT)/samples.txt - | sed 's/\t/  ->  /'

# A translation model in minutes (README, "A translation model in minutes"): a German corpus
# from this machine's own catalogs (wdiff's sources left out: the demo fills its catalog),
# the quick preset (translation's model narrowed to 96 / 192, 3 epochs in bf16: 10 minutes of
# one core here),
# then wdiff's template filled with an earlier release's translations as the memory
# and a glossary (examples/). Each run starts afresh in $(DEMO_DE).
DEMO_DE ?= runs/demo-de
demo-translation: $(PO)
	rm -rf $(DEMO_DE) && mkdir -p $(DEMO_DE) && date +%s > $(DEMO_DE)/started
	$(BIN)/luong corpus --tgt-lang de --exclude tests/data/catalogs/wdiff.de.po \
	    --out $(DEMO_DE)/corpus
	$(BIN)/luong train --preset quick --threads 1 --train $(DEMO_DE)/corpus/train.tsv \
	    --dev $(DEMO_DE)/corpus/dev.tsv --test $(DEMO_DE)/corpus/devtest.tsv \
	    --src-lang en --tgt-lang de --out $(DEMO_DE)/model
	# exit 3: the catalog is written, the entries whose format check failed named for review
	$(BIN)/luong po $(DEMO_DE)/model tests/data/catalogs/wdiff.pot --tgt-lang de \
	    --tm examples/wdiff.earlier.de.po --glossary examples/glossary.de.tsv \
	    --out $(DEMO_DE)/wdiff.de.po; status=$$?; [ $$status -eq 0 ] || [ $$status -eq 3 ]
	@$(BIN)/python scripts/demo_summary.py $(DEMO_DE)

# Speed: training throughput and MFU against a straightforward reference, decoding, memory.
bench: setup
	$(BIN)/python benchmarks/bench.py

# Corpora larger than memory: peak RSS and time to the first step, text path against a
# prepared corpus, at 20k, 200k and 2M pairs (generated; about an hour on a quiet machine).
bench-large: setup
	$(BIN)/python benchmarks/large_corpus.py --out docs/large_corpus.json

# luong and JoeyNMT 2.3 trained side by side on gettext-en-de for an hour each (one thread
# each), then devtest decoded by both: benchmarks/joeynmt.json and docs/joeynmt.png.
JOEYNMT_DATA ?= ../shared/data/gettext-en-de
joeynmt: setup
	$(BIN)/python benchmarks/joeynmt.py --data $(JOEYNMT_DATA) --work runs/joeynmt

# The same with JoeyNMT's Transformer (one at a time: each takes a core beside luong's):
# benchmarks/joeynmt_transformer_equal.yaml (about the preset's parameter count) or _small.yaml
# (the size of JoeyNMT's IWSLT14 Transformer): benchmarks/transformer_{equal,small}.json, and
# docs/transformer.png from both JSONs that exist (joeynmt-transformer-plot redraws it).
# JoeyNMT validates every 1,200 steps: at its LSTM's 400, an early Transformer's greedy
# validations (up to 150 tokens a sentence) took 34 of its 60 minutes. luong keeps its last
# 3 epoch checkpoints: the run was also a member of the translation ensemble (seed 0), when
# the preset trained 19 epochs (add --epochs 19 after -- to repeat that run).
joeynmt-transformer-equal: setup
	$(BIN)/python benchmarks/joeynmt.py --data $(JOEYNMT_DATA) --work runs/transformer-equal \
	    --peer benchmarks/joeynmt_transformer_equal.yaml --validation-freq 1200 \
	    -- --keep-checkpoints 3

# The small Transformer makes about 0.35 steps a second on one thread: 1,200 steps take the
# whole hour, and a validation of an early model takes tens of minutes more. It validates
# once, at 1,000 steps, and both processes get 80 minutes so that the validation ends inside
# them (luong's side, the preset's 24 epochs, ends on its own within the hour).
joeynmt-transformer-small: setup
	$(BIN)/python benchmarks/joeynmt.py --data $(JOEYNMT_DATA) --work runs/transformer-small \
	    --peer benchmarks/joeynmt_transformer_small.yaml --validation-freq 1000 --minutes 80 \
	    --repeats 1 -- --keep-checkpoints 3

joeynmt-transformer-plot: setup
	$(BIN)/python benchmarks/joeynmt.py --plot-only --peer benchmarks/joeynmt_transformer_equal.yaml
