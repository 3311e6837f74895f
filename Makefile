# topictool: `make demo` and `make test` work on a fresh machine. Both create
# .venv (unless a virtual environment is already active) and install the
# package with its test extra into it.
PYTHON ?= python3
ifdef VIRTUAL_ENV
VENV := $(VIRTUAL_ENV)
else
VENV := .venv
endif
PY := $(VENV)/bin/python
TT := $(VENV)/bin/topictool
STAMP := $(VENV)/.topictool-installed
DEMO := build/demo
PYTEST_ARGS ?=

.PHONY: install demo test clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,mpi]'
	@touch $(STAMP)

# The tour on a built-in default: the Griffiths-Steyvers bars (20 true topics on a
# 10x10 grid) -> a prepared corpus -> HDP-LDA by Gibbs sampling over table counts and the online
# variational HDP with split-merge moves, both started with more or fewer topics than
# the truth -> held-out perplexity -> the recovered topics drawn as 10x10 pictures.
demo: $(STAMP)
	$(TT) synth bars -o $(DEMO)/bars --format ldac --force
	$(TT) prepare $(DEMO)/bars/train.ldac --vocab $(DEMO)/bars/vocab.txt --min-count 1 \
		--test-fraction 0.1 -o $(DEMO)/corpus --force
	$(TT) train $(DEMO)/bars -m hdp-gibbs -K 30 -n 300 --seed 1 --log-every 50 -o $(DEMO)/hdp-gibbs --force
	$(TT) evaluate $(DEMO)/hdp-gibbs $(DEMO)/bars
	$(PY) scripts/show_bars.py $(DEMO)/hdp-gibbs --truth $(DEMO)/bars/truth.npz --min-weight 0.02 \
		--png $(DEMO)/hdp-gibbs.png
	$(TT) train $(DEMO)/bars -m hdp-online-sm -K 5 -n 400 --set minibatch=100 --seed 1 --log-every 50 \
		-o $(DEMO)/hdp-online-sm --force
	$(TT) evaluate $(DEMO)/hdp-online-sm $(DEMO)/bars --method vb
	$(PY) scripts/show_bars.py $(DEMO)/hdp-online-sm --truth $(DEMO)/bars/truth.npz --min-weight 0.02 \
		--png $(DEMO)/hdp-online-sm.png
	@echo
	@echo "The demo wrote, under $(DEMO)/:"
	@echo "  bars/            the synthetic corpus (train.npz, test.npz, vocab.txt, train.ldac) and truth.npz"
	@echo "  corpus/          the same LdaC file prepared again, as from your own data"
	@echo "  hdp-gibbs/       a training run: run.json, metrics.jsonl, model.npz, checkpoints/"
	@echo "  hdp-online-sm/   a second run"
	@echo "  *.png            the topics as pictures (with the plot extra: $(PY) -m pip install '.[plot]')"
	@echo "  report.html      the hdp-gibbs model as one self-contained HTML page (below)"
	@echo "Put the tool on your PATH to try it:  export PATH=\"$$PWD/$(VENV)/bin:\$$PATH\""
	@echo
	$(TT) report $(DEMO)/hdp-gibbs -o $(DEMO)/report.html --force
	@echo "The report of the demo model (open it in any browser, no network needed): $(abspath $(DEMO)/report.html)"

# Lint and format checks (ruff), then the unit and integration tests; the last of
# them runs `make -C scripts smoke` (every experiment config on tiny data, every
# model trained at least once).
test: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q $(PYTEST_ARGS)

clean:
	rm -rf build .pytest_cache
