VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

# The suite spawns many worker processes; each would otherwise recompile tunecli from source.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: install test test-all demo lint layering bench clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e '.[test,plot,onnx,torch,ray]'
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PY) scripts/module_sizes.py
	$(PY) -m pytest -q

test-all: $(STAMP)
	$(PY) -m pytest -q -m ''

lint: $(STAMP)
	$(VENV)/bin/ruff check tunecli tests benchmarks scripts

layering: $(STAMP)
	$(PY) -m pytest -q tests/test_layering.py

demo: $(STAMP)
	$(VENV)/bin/tunecli tune jobs/quickstart.yaml --log logs/quickstart.log
	$(VENV)/bin/tunecli best logs/quickstart.log

bench: $(STAMP)
	$(PIP) install -q -e '.[bench]'
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info
