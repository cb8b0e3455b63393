# The two commands of the README, each doing its own set-up on a fresh machine:
#   make smoke   build the virtual environment, run the smoke reproduction, print all.tsv
#   make test    build the virtual environment, run the test suite
# Everything else here is a helper of those two, or a check (make rehearsal: every job of the full
# configuration on stand-in inputs, against its SLURM request).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
CORES ?= 2
SMOKE_DIR ?= .
REHEARSAL_DIR ?= /tmp/mmt-repro-rehearsal
REHEARSAL_TARGETS ?= all
STAMP := $(VENV)/.installed

.PHONY: smoke test test-fast venv lint java-check dryrun rehearsal bench-plan bench-load bench-peer clean-results

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch/torchvision pinned in pyproject.toml (2.14.1 / 0.29.1); pip takes them from the
	# machine's local wheel store when it has one. PyPI's Linux torch is the CUDA build (its
	# NVIDIA wheels make .venv ~6.5 GB); the CPU-only wheels are on the PyTorch index, not on
	# PyPI: CPU_WHEELS=1 takes them from there where that index can be reached.
	@echo "mmt-repro: installing the package and its dependencies into $(VENV) (torch with CUDA: ~6.5 GB, several minutes)"
	$(if $(CPU_WHEELS),$(BIN)/python -m pip install --progress-bar on torch==2.14.1 torchvision==0.29.1 --index-url https://download.pytorch.org/whl/cpu,)
	$(BIN)/python -m pip install --progress-bar on -e '.[test]'
	touch $(STAMP)

# METEOR (Meteor 1.5, a Java program) scores four papers' tables, the smoke run's included.
java-check:
	@command -v java >/dev/null 2>&1 || { echo "mmt-repro: METEOR needs Java 8 or newer and none is on PATH: apt-get install default-jre-headless (or conda install openjdk), then re-run"; exit 1; }

venv: $(STAMP)

smoke: java-check $(STAMP)
	$(BIN)/snakemake --snakefile Snakefile --directory $(SMOKE_DIR) --configfile config/smoke.yaml \
		--cores $(CORES) --scheduler greedy --rerun-incomplete all
	$(BIN)/python -m mmt_repro show $(SMOKE_DIR)/results/tables/all.tsv

# Every lane: unit, pipeline, e2e (smoke, stand-in paper) and slurm (a real single-node cluster,
# which doubles as the determinism check), in one session on two pytest workers (pytest-xdist; one
# torch thread a test). --dist loadgroup keeps the tests of one shared run on one worker
# (tests/conftest.py names the groups) and hands out the largest group first: one worker starts
# the smoke run (both cores) at once, the other runs the SLURM tests, which mostly wait for the
# cluster, and every other test beside it. tests/conftest.py says which test is in which lane.
FAST_LANES = OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n 2

test: java-check $(STAMP)
	$(FAST_LANES) --dist loadgroup --durations=25

# Daily work: unit + pipeline (planning, data steps, error paths; no real training), < 3 min:
# the tests marked `slow` (over ~10 s each: they train, run a DAG stage or Java) wait for `make test`.
test-fast: $(STAMP)
	$(FAST_LANES) -m "not e2e and not slurm and not slow"

lint: $(STAMP)
	$(BIN)/snakemake --lint --configfile config/smoke.yaml
	$(BIN)/snakefmt --check Snakefile workflow/rules/*.smk

dryrun: $(STAMP)
	$(BIN)/snakemake results/tables/all.tsv -n --quiet rules

# The full configuration rehearsed on stand-in inputs: every job of `all` (every paper, table and
# system at the papers' model sizes) on the stand-in mirror, cut to a few updates
# (config/rehearsal.yaml), run in $(REHEARSAL_DIR) (the mirror in its mirror/); then each job's
# wall time and peak memory against what the SLURM profile requests for it at full size, and the
# jobs already over their request (docs/performance.md, "Rehearsal").
#   make rehearsal REHEARSAL_TARGETS=results/tables/emb_pred/table1.tsv   # one table's jobs
rehearsal: java-check $(STAMP)
	$(BIN)/python -m mmt_repro standins $(REHEARSAL_DIR)/mirror --real-shapes
	rc=0; $(BIN)/snakemake --snakefile Snakefile --directory $(REHEARSAL_DIR) \
		--configfile config/rehearsal.yaml $(REHEARSAL_DIR)/mirror/standin_config.yaml \
		--cores $(CORES) --scheduler greedy --keep-going --rerun-incomplete $(REHEARSAL_TARGETS) || rc=$$?; \
	$(BIN)/python -m mmt_repro rehearsal-report $(REHEARSAL_DIR) --out $(REHEARSAL_DIR)/evidence; exit $$rc

# Benchmarks print figures (min/median/max of repeats); run them on an otherwise idle machine.
bench-plan: $(STAMP)
	$(BIN)/python benchmarks/bench_plan.py

bench-load: $(STAMP)
	$(BIN)/python benchmarks/bench_load.py

# Ours against JoeyNMT 2.3.0 on real Multi30k text (installs the peer into .venv-peer first):
#   make bench-peer                                    # 4-min budget, 3 repeats (~35 min)
#   make bench-peer BENCH_PEER_ARGS="--budget-min 40 --repeats 1"   # the full run
bench-peer: $(STAMP)
	benchmarks/peer/setup_peer.sh
	$(BIN)/python benchmarks/peer/bench_peer.py $(BENCH_PEER_ARGS)

clean-results:
	rm -rf results .snakemake
