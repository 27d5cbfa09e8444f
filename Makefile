# gradlane: verb-noun targets. `make run` and `make test` work on a fresh Debian 12 machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD ?= build
PROGRAM ?= gradlane
TOPO ?= incast
JOBS ?= 1

# Real p4c / BMv2 when on PATH, else the embedded target (override with P4C=... SWITCH=...).
P4C ?= $(shell command -v p4c-bm2-ss 2>/dev/null || echo "$(PY) -m p4target compile")
SWITCH ?= $(shell command -v simple_switch_grpc 2>/dev/null || echo "$(PY) -m p4target switch")
# The switches' log level (-L): warn unless asked; `make run SWITCH_LOG=debug` traces every packet
# (into logs/<switch>.log, capped; it slows BMv2 many times over). Also for demo and experiments.
SWITCH_LOG ?=
export P4C SWITCH SWITCH_LOG

.PHONY: experiment experiments all setup build run demo test test-unit test-sim test-conformance test-integration test-topology lint bench bench-ns3 fuzz stop \
        clean check-env check-reference check-compiler chaos soak load

all: build

setup:
	@bash scripts/setup.sh

# The embedded compiler's own sources (and its v1model.p4) count as inputs; `setup` is order-only so
# that an up-to-date program is not recompiled on every `make run`.
COMPILER_SOURCES := $(shell find p4target/compiler -name '*.py' -o -name '*.p4')

$(BUILD)/$(PROGRAM).json: $(wildcard p4src/*.p4) $(COMPILER_SOURCES) | setup
	@mkdir -p $(BUILD)
	$(P4C) --arch v1model --p4v 16 -I p4src \
	  --p4runtime-files $(BUILD)/$(PROGRAM).p4info.txtpb \
	  -o $(BUILD)/$(PROGRAM).json p4src/$(PROGRAM).p4

build: $(BUILD)/$(PROGRAM).json

# P4Runtime runs over TLS with a per-run CA (logs/pki); `make run PLAINTEXT=1` turns it off (a
# testbed without PKI: any local user can then program the switches; docs/security.md).
PLAINTEXT ?=
RUN_FLAGS := $(if $(PLAINTEXT),--plaintext)

run: build
	$(PY) -m topo.run --topo $(TOPO) --build $(BUILD) --jobs $(JOBS) $(RUN_FLAGS)

demo: build
	$(PY) -m topo.run --topo $(TOPO) --build $(BUILD) --demo $(RUN_FLAGS)

test: setup
	$(PY) -m pytest -q -p no:cacheprovider --durations=25 tests

# The unit tier (about 45 s of CPU): no network socket, no gRPC, no ns-3 (tests/unit/conftest.py fails a
# test that tries); its tests marked slow (mutation sweeps, plots, agents started as processes) run
# in `make test`, or with the rest: `$(PY) -m pytest tests/unit`.
test-unit: setup
	$(PY) -m pytest -q -p no:cacheprovider -m "not slow" tests/unit

test-sim: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/sim

test-conformance: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/conformance

test-integration: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/integration

test-topology: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/topology

lint: setup
	$(VENV)/bin/ruff check .

bench: setup
	$(PY) -m benchmarks

# ns-3 backend speed (not in CI; no root): simulated packets per wall-second and the wall time
# of one LTP round at 10 Gb/s, 8 workers x 25 M parameters (about 1-2 minutes)
bench-ns3: setup
	$(PY) -m benchmarks ns3_sim

# bounded fuzzers (not in CI): frames and P4Runtime requests against a local embedded switch,
# policy files against the loader and gradctl, gradient packets against a local PS (loopback),
# the control plane (P4Runtime streams and arbitration over TLS, unauthenticated clients, Thrift)
FUZZ_SECONDS ?= 300
fuzz: setup
	$(PY) -m fuzz --seconds $(FUZZ_SECONDS)

# Not in CI: our compiler's JSON on a locally built real BMv2 through p4c's STF runner
# (p4target/README.md, "Checking against the real BMv2"); ARGS=--samples for p4c's samples.
# Then (root, Mininet; ~10 min) `make demo` and an ltp_incast --quick run on p4c + BMv2 beside
# the embedded target, with the table of figures that must agree (scripts/check_parity.py), and
# differential forwarding of two large real programs (P4C_SRC: a p4c checkout with
# testdata/p4_16_samples) through p4c's and our JSON on real BMv2 and the embedded switch.
DIFF_PROGRAMS ?= fabric pins_middleblock
check-reference: setup
	$(PY) scripts/check_reference.py $(ARGS)
	$(PY) scripts/check_parity.py
	for p in $(DIFF_PROGRAMS); do $(PY) scripts/differential_forwarding.py --program $$p || exit 1; done

# Run before landing a change to p4target/compiler/ (not in CI: it needs a p4c checkout, P4C_SRC):
# p4c's v1model STF samples compiled by our compiler on the embedded switch, and on real BMv2
# through p4c's runner where the reference is installed, against the recorded pass list
# (scripts/p4c_samples_record.json); exits 1 on a regression. ARGS=--record after a fix.
check-compiler: setup
	$(PY) scripts/check_compiler.py $(ARGS)

# Experiments (root; on a shared machine under /tmp/gradlane-net.lock): `make experiment
# NAME=ltp_incast [ARGS="--quick --reps 5 --publish"]`, `make experiments` runs all of them.
NAME ?=
ARGS ?=
experiment: build
	@if [ -z "$(NAME)" ]; then echo "usage: make experiment NAME=<name> [ARGS=...]; names:"; \
	  $(PY) -m experiments --list; exit 2; fi
	$(PY) -m experiments $(NAME) $(ARGS)

experiments: build
	$(PY) -m experiments all $(ARGS)

# Not in CI (root; on a shared machine under /tmp/gradlane-net.lock): training jobs with random
# faults (a switch, the controller or a worker killed) for CHAOS_MINUTES; prints the faults
# injected and survived, the rounds each cost, and the jobs finished and lost.
CHAOS_MINUTES ?= 3
chaos: build
	$(PY) -m topo.chaos --minutes $(CHAOS_MINUTES) --build $(BUILD)

# Not in CI: two jobs with background traffic for DURATION minutes, sampled every SOAK_INTERVAL
# seconds (RSS, fds, threads per process; table entries; controller state and connections; log
# sizes; rounds); samples.jsonl, summary.md and plots in SOAK_OUT. Fails when a process grew.
DURATION ?= 30
SOAK_INTERVAL ?= 60
SOAK_OUT ?= logs/soak
soak: build
	$(PY) -m topo.soak --minutes $(DURATION) --interval $(SOAK_INTERVAL) --out $(SOAK_OUT) --build $(BUILD)

# Not in CI: 1..4 concurrent jobs x {2,4,8} workers of the two-jobs test's short job on one
# machine (a fresh network per cell), each row grown until rounds close by deadline or a bound
# breaks; per cell rounds, deadline closes, violations, round times, switch and host CPU, load.
LOAD_ARGS ?=
LOAD_OUT ?= logs/load
load: build
	$(PY) -m topo.load_sweep --build $(BUILD) --out $(LOAD_OUT) --log-dir $(LOAD_OUT) $(LOAD_ARGS)

stop:
	-@[ -x $(PY) ] && $(PY) -m topo.stop || true

clean: stop
	rm -rf $(BUILD) logs pcaps

check-env: setup
	$(PY) -m topo.check_env
