# gradlane: verb-noun targets. `make run` and `make test` work on a fresh Debian 12 machine.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
BUILD ?= build
PROGRAM ?= gradlane
TOPO ?= incast

# Real p4c / BMv2 when on PATH, else the embedded target (override with P4C=... SWITCH=...).
P4C ?= $(shell command -v p4c-bm2-ss 2>/dev/null || echo "$(PY) -m p4target compile")
SWITCH ?= $(shell command -v simple_switch_grpc 2>/dev/null || echo "$(PY) -m p4target switch")
export P4C SWITCH

.PHONY: all setup build run demo test test-unit test-conformance test-topology bench stop clean check-env check-reference

all: build

setup:
	@bash scripts/setup.sh

$(BUILD)/$(PROGRAM).json: setup $(wildcard p4src/*.p4)
	@mkdir -p $(BUILD)
	$(P4C) --arch v1model --p4v 16 -I p4src \
	  --p4runtime-files $(BUILD)/$(PROGRAM).p4info.txtpb \
	  -o $(BUILD)/$(PROGRAM).json p4src/$(PROGRAM).p4

build: $(BUILD)/$(PROGRAM).json

run: build
	$(PY) -m topo.run --topo $(TOPO) --build $(BUILD)

demo: build
	$(PY) -m topo.run --topo $(TOPO) --build $(BUILD) --demo

test: setup
	$(PY) -m pytest -q -p no:cacheprovider tests

test-unit: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/unit

test-conformance: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/conformance

test-topology: setup
	$(PY) -m pytest -q -p no:cacheprovider tests/topology

bench: setup
	$(PY) -m benchmarks

# Not in CI: our compiler's JSON on a locally built real BMv2 through p4c's STF runner
# (p4target/README.md, "Checking against the real BMv2"); ARGS=--samples for p4c's samples.
check-reference: setup
	$(PY) scripts/check_reference.py $(ARGS)

stop:
	-@[ -x $(PY) ] && $(PY) -m topo.stop || true

clean: stop
	rm -rf $(BUILD) logs pcaps

check-env: setup
	$(PY) -m topo.check_env
