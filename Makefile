# Two commands: `make demo` and `make test`. Both create or refresh .venv from the project's own
# files (pyproject.toml, constraints.txt); a no-op when nothing changed.
PYTHON ?= python3.11
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= demo-output
# TORCH_INDEX: a wheel index torch and torchvision come from first, e.g. CPU-only (no CUDA
# libraries, ~200 MB instead of several GB):
#   make demo TORCH_INDEX=https://download.pytorch.org/whl/cpu
# Empty (the default): they come with everything else from the usual index.
TORCH_INDEX ?=
PIP    := $(BIN)/python -m pip install -q --disable-pip-version-check -c constraints.txt

.PHONY: demo test test-fast test-slow lint bench clean

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(if $(TORCH_INDEX),$(PIP) --index-url $(TORCH_INDEX) torch torchvision)
	$(PIP) -e '.[dev]'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/shortcutlab demo --out $(OUT)

# `make test`: every test under tests/, the slow ones (marker `slow`) included.
# `make test-fast`: all but the slow ones; `make test-slow`: only the slow ones.
# Two pytest-xdist workers (CI has 2 cores; TEST_WORKERS=0 runs in one process); tests marked
# xdist_group(...) share one worker (--dist loadgroup). --durations=25 shows where time goes.
TEST_WORKERS ?= 2
XDIST := $(if $(filter 0,$(TEST_WORKERS)),-p no:xdist,-n $(TEST_WORKERS) --dist loadgroup)

test: $(STAMP)
	@echo "== pytest tests/: the whole suite, slow tests included (make test-fast skips them)"
	$(BIN)/python -m pytest $(XDIST) --durations=25

test-fast: $(STAMP)
	@echo "== pytest tests/ -m 'not slow': the suite without the slow tests"
	$(BIN)/python -m pytest $(XDIST) --durations=10 -m "not slow"

test-slow: $(STAMP)
	@echo "== pytest tests/ -m slow: only the slow tests"
	$(BIN)/python -m pytest $(XDIST) --durations=25 -m slow

# ruff (style, unused noqa included) and mypy (types of src/; configuration in pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check --extend-select RUF100 src tests benchmarks
	$(BIN)/mypy src

bench: $(STAMP)
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
