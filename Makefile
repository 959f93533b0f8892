# shapelaw — top-level entry points. `make` runs the embedded micro-study,
# `make test` builds and runs every test. Both install missing Debian packages first.
# The studies run nproc runs at once by default; `make -jN` sets the count (-j1: one by one).
SHELL := /bin/bash
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
export PATH := $(CURDIR)/$(BUILD)/bin:$(PATH)

.PHONY: all deps build test fast controls controls-equal-n chinchilla refit bench-data bench-train bench-fit refit-paper \
  clean help check-reproduced published build-fit build-tools configure

# An explicit -j1 here reaches the study (a sub-make would otherwise pick its own default).
study_jobs = $(if $(filter -j1,$(MAKEFLAGS)),STUDY_JOBS=1)

all: build-tools
	$(MAKE) -f pipelines/micro.mk $(study_jobs)

help:
	@echo "make              build, then run the embedded micro pipeline (pipelines/micro.mk), nproc runs at once"
	@echo "                  (-jN: N at once; V=1: echo commands; SEEDS=, LRS=, GRID=, TOKENS=, DATA=: see README)"
	@echo "make test         build and run all tests (CTest)"
	@echo "make bench-data   tokenize/shard benchmarks, GPT-2 vs sentencepiece vs JS (results: docs/benchmarks.md)"
	@echo "make bench-train  trainer benchmark against the PyTorch reference"
	@echo "make bench-fit    fit-law timings"
	@echo "make fast         the micro pipeline at FAST=1 (three tiny runs, every stage)"
	@echo "make check-reproduced  after make: this machine's runs against the committed ones (pipelines/expected/),"
	@echo "                  bit for bit (the default study's file is committed; FAST=1, SEEDS=: that study's,"
	@echo "                  which UPDATE=1 writes from this machine's runs; UPDATE=1 also rewrites the committed one)"
	@echo "make controls     the controls study: SP at tuned LRs and CompleteP (pipelines/controls.mk)"
	@echo "make controls-equal-n   the same plus an equal-parameter depth sweep (report-controls-equal-n/)"
	@echo "make chinchilla   the micro grid at 20 tokens per parameter on public-domain prose, SP and CompleteP (pipelines/chinchilla.mk)"
	@echo "make refit RUNS=... fit and audit existing results only (pipelines/refit.mk)"
	@echo "make refit-paper  refit the paper's own tables with fit-law"
	@echo "make published    the paper's claim against every sweep: Gemstones (W 256-3072), the paper's 30 and our"
	@echo "                  studies under DATA, one fit-law sweep each (report-published/README.md; no LibTorch)"
	@echo "make clean        remove $(BUILD)/"

deps:
	@scripts/install-deps

# CMake tracks its own dependencies; always delegate to it.
configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >$(BUILD).configure.log 2>&1 \
	  || { cat $(BUILD).configure.log; exit 1; }

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# the tools alone, what the pipelines run: `make` does not wait for the test binaries
build-tools: configure
	@cmake --build $(BUILD) -j $(JOBS) --target shapelaw_tools

# the GPT-2 tokenizer's tests compare against its files and JS reference (fetched once)
test: build
	@SHAPELAW_CACHE=$${SHAPELAW_CACHE:-$(CURDIR)/$(BUILD)/cache} scripts/fetch-tokenizer gpt2 >/dev/null
	cd $(BUILD) && ctest -j $(JOBS) --output-on-failure --timeout 600

bench-data: build
	bench/data.sh
	bench/tokenizers.sh

bench-train: build
	bench/train.sh

bench-fit: build
	bench/fit.sh

# After `make` (same FAST/SEEDS/DATA): each run's final losses and weights against the
# committed expected file. Runs of the fixed kernel set (KERNELS=fixed, the default) are
# the same bits on every x86-64 CPU with AVX2+FMA; UPDATE=1 rewrites the file from this
# machine's runs (after a retrain that moves the numbers on purpose).
DATA ?= data
# (the study directory as micro.mk names it: seeds 42 43 by default, SEEDS= another list)
REPRODUCE_STUDY ?= $(DATA)/micro/study$(if $(filter 1,$(FAST)),-fast,$(if $(filter command% environment%,$(origin SEEDS)),$(if $(strip $(SEEDS)),-seeds,-1seed)))
EXPECTED ?= pipelines/expected/$(notdir $(REPRODUCE_STUDY)).json
check-reproduced:
	@scripts/check-reproduced $(if $(filter 1,$(UPDATE)),--write) --expected $(EXPECTED) $(REPRODUCE_STUDY)/runs

fast: build-tools
	$(MAKE) -f pipelines/micro.mk FAST=1 $(study_jobs)

# the controls study (tuned learning rates, CompleteP): runs in parallel, one thread each
# The main report quotes the controls' verdict: refreshed here, when the study it reports
# is up to date (its page only, seconds; a stale study is left for the next `make`).
controls: build-tools
	$(MAKE) -j $(JOBS) -f pipelines/controls.mk
	@if [ -f report/README.md ] && $(MAKE) -n --no-print-directory -f pipelines/micro.mk \
	    $(DATA)/micro/study/results/fit.json 2>&1 | grep -q "is up to date"; then \
	  echo "make controls: report/README.md quotes the controls' verdict: refreshing it"; \
	  $(MAKE) --no-print-directory -f pipelines/micro.mk report/README.md; fi
controls-equal-n: build-tools
	$(MAKE) -j $(JOBS) -f pipelines/controls.mk equal-n

# the paper's protocol in miniature: a token budget per configuration (report-chinchilla/)
chinchilla: build-tools
	$(MAKE) -j $(JOBS) -f pipelines/chinchilla.mk

refit: build-tools
	$(MAKE) -f pipelines/refit.mk

refit-paper: build-tools
	$(MAKE) -f pipelines/refit-paper.mk

# fit-law alone (no LibTorch target is built)
build-fit: configure
	@cmake --build $(BUILD) -j $(JOBS) --target fit-law

published: build-fit
	$(MAKE) -j $(JOBS) -f pipelines/published.mk

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
