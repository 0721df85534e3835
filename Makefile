# burtbench: `make bench-linux` runs the suite (PROFILE=quick by default, PROFILE=paper for the
# paper's counts) and ends with its report, reports/<run-id>/, and a verdict for each of the paper's
# claims; `make test` runs the tests. Both set up .venv/ first.
PYTHON ?= python3
PROFILE ?= quick
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.burtbench-installed
EXT_SOURCES := $(shell find burtorch_ext -type f \( -name '*.hpp' -o -name '*.cpp' -o -name 'CMakeLists.txt' \) 2>/dev/null)
RUN_ARGS ?=

.PHONY: setup burn browser slurm clang bench-linux bench-windows bench-macos test report reference-report perf perf-grid gate-engine clean

setup: $(STAMP)

# torch goes first and pinned, so that no later requirement pulls the multi-GB CUDA build.
$(STAMP): pyproject.toml $(EXT_SOURCES)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet torch==2.13.0
	$(BIN)/python -m pip install --quiet -e ".[frameworks,test]"
	touch $(STAMP)

# The Burn engine's driver (engines/burn_driver), built now rather than by the first run that needs it:
# `cargo build --release --locked`, the crates from crates.io, or offline from a `cargo vendor` folder
# (make burn CARGO_VENDOR=DIR). Without cargo or the crates it prints the one line that says what is
# missing, and make goes on.
burn: setup
	-$(if $(CARGO_VENDOR),BURTBENCH_CARGO_VENDOR=$(CARGO_VENDOR)) $(BIN)/python -m engines.burn

bench-linux: setup clang
	$(BIN)/burtbench run --engine all --profile $(PROFILE) $(RUN_ARGS)

# Windows (GNU make from cmd.exe or Git Bash; `make bench-windows PYTHON=python`): the venv keeps
# its interpreter in Scripts\, and the quotes keep the backslashes for either shell.
WIN_PY := "$(VENV)\Scripts\python.exe"
bench-windows:
	$(PYTHON) -m venv $(VENV)
	$(WIN_PY) -m pip install --upgrade pip
	$(WIN_PY) -m pip install torch==2.13.0
	$(WIN_PY) -m pip install -e ".[frameworks,test]"
	$(WIN_PY) -m harness.commands.cli run --engine all --profile $(PROFILE) $(RUN_ARGS)

bench-macos: setup
	$(BIN)/burtbench run --engine all --profile $(PROFILE) $(RUN_ARGS)

# The HTML report is tested in a real headless Chromium: install Debian's where we can (root + apt).
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "note: chromium could not be installed; the HTML report test will be skipped"

# A real SLURM cluster for tests/test_slurm.py (one node) and tests/test_slurm_nodes.py (three; the tests start and stop them).
slurm:
	@command -v sbatch >/dev/null 2>&1 && command -v slurmctld >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
	      slurmctld slurmd slurm-client >/dev/null; } || \
	  echo "note: SLURM could not be installed; the SLURM tests will be skipped"

# tinygrad's CPU device compiles its kernels with clang: install Debian's where we can (root + apt).
clang:
	@command -v clang >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang >/dev/null; } || \
	  echo "note: clang could not be installed; the tinygrad engines will be unavailable"

# One worker per core of this project's 2-core machines (TEST_WORKERS=1: one process); each test file
# runs whole in one worker, so that its module fixtures are built once.
TEST_WORKERS ?= 2
test: setup browser slurm clang
	$(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile

perf: setup
	$(BIN)/burtbench run --engine burtorch,micrograd --workload tiny,small --profile quick $(RUN_ARGS)

# Every engine on the whole MLP and GPT grids (quick counts, one trial per point), then at each point
# BurTorch's time against the fastest other framework's (python -m harness.commands.versus).
GRID_OUT ?= results/grid
perf-grid: setup
	$(BIN)/burtbench run --engine all --workload mlp --param hidden_dim=4,16,32,64,128,512,1024 --param batch=1,64 --out $(GRID_OUT)/mlp $(RUN_ARGS)
	$(BIN)/burtbench run --engine all --workload gpt --param batch=1,2,4,8,16,32,64 --out $(GRID_OUT)/gpt $(RUN_ARGS)
	$(BIN)/python -m harness.commands.versus $$(ls -1d $(GRID_OUT)/mlp/*/ | tail -n 1) $$(ls -1d $(GRID_OUT)/gpt/*/ | tail -n 1)
	$(BIN)/python -m harness.commands.versus --engine burtorch/eager/python/cpu $$(ls -1d $(GRID_OUT)/mlp/*/ | tail -n 1) $$(ls -1d $(GRID_OUT)/gpt/*/ | tail -n 1)

# The engine's gate (docs/versions.md, "A gate for the engine"; not in `make test`): instructions per iteration of
# burtorch@$(GATE_BASE) against burtorch@HEAD, both of our rows, at tiny, small, MLP and GPT points (on an
# AVX-512 CPU, of their AVX+FMA builds); exit 1 where HEAD counts more than GATE_PCT% more, or counts nothing.
# One trial, no A/A copies (--no-aa): instructions decide the gate, and they repeat within ~0.1%; each
# count costs minutes at the MLP and GPT points.
GATE_BASE ?= main
GATE_PCT ?= 0.5
GATE_OUT ?= results/gate
gate-engine: setup
	$(BIN)/burtbench run --engine burtorch --env burtorch@$(GATE_BASE) --env burtorch@HEAD --instructions \
	  --workload tiny,small,mlp,gpt --param batch=64 --param hidden_dim=1024 --profile smoke --trials 1 --no-aa \
	  --no-report --out $(GATE_OUT) $(RUN_ARGS)
	run="$$(ls -1d $(GATE_OUT)/*/ | tail -n 1)"; run="$${run%/}"; \
	$(BIN)/burtbench compare "$$run@burtorch@$(GATE_BASE)" "$$run@burtorch@HEAD" --fail-if-more-instructions $(GATE_PCT)

# The newest run under results/, a `run --slurm` run by its merged folder (by run id: a run id starts with its
# date; the committed reference run is rendered with `burtbench report results/reference`).
report: setup
	@run="$$(ls -1d results/*/manifest.json results/*/merged/*/manifest.json 2>/dev/null | grep -v '^results/reference/' \
	  | awk -F/ '{ print $$(NF-1) " " $$0 }' | sort | tail -n 1 | cut -d' ' -f2)"; run="$${run%/manifest.json}"; \
	if [ -z "$$run" ]; then echo "make report: no run in results/ yet: make bench-linux first" >&2; exit 2; fi; \
	$(BIN)/burtbench report "$$run"

# The committed report of the committed reference run: reports/reference/ (Markdown, CSV and LaTeX tables,
# PNG figures, claims.md; the PDFs and index.html are ignored), and claims-pooled.md over every machine this project has
# runs from (results/machines/). tests/test_reference_report.py fails while it is stale.
reference-report: setup
	rm -rf reports/reference
	$(BIN)/burtbench report results/reference
	$(BIN)/burtbench claims results/reference results/machines/* --report-dir reports/reference > /dev/null

clean:
	rm -rf build $(VENV)
	find reports -mindepth 1 -maxdepth 1 ! -name reference -exec rm -rf {} + 2>/dev/null || true
