# The embedded micro-study (run by a bare `make`): Brown corpus -> tokenize -> shard
# -> verify -> a depth sweep at several widths (train) -> probe-grads -> fit-law ->
# audit -> report/. Tools come from build/bin (pipelines/tools.mk finds it).
#   make                      the default study (budget: under 30 minutes on 2 cores)
#   make FAST=1               three tiny runs, every stage (under 3 minutes)
#   make GRID=my.grid TOKENS=2000000 ...   any grid and budget
#   make SEEDS="42 43 44"     the seeds every run is trained with (default: 42 43, so that
#                             every excess has an SE from the spread between seeds; SEEDS=
#                             one run per row, seed 42: study-1seed/, report-1seed/)
#   make LRS="1e-3 3e-3 1e-2" every run once per learning rate; the fit keeps the best
#   make TRAIN_EXTRA="--mlp swiglu"   flags appended to every run's train flags
#   make KERNELS=native       this CPU's fastest kernels instead of the fixed set (below)
#   make check-reproduced     (top-level Makefile) this machine's runs against pipelines/expected/
# Outputs follow DATA and STUDY: the repository's report/ is written only by the default
# study (report-seeds/, report-1seed/ under other SEEDS); any other STUDY or DATA gets
# STUDY/report unless REPORT_DIR is set.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

# CORPUS: what the data stage fetches and imports (scripts/fetch-corpus, docs/corpus.md):
# brown, the default, or pd-prose (public-domain prose, 6x Brown). The tokenizer, shards and
# studies live under DATA, so another corpus gets its own (data/CORPUS) and never mixes
# with Brown's; its name is in the tokenizer's stamp, so a DATA given by hand retrains.
CORPUS ?= brown
corpus_is_brown := $(filter brown,$(CORPUS))
# (read before DATA and STUDY get their defaults)
study_is_default := $(and $(corpus_is_brown),$(filter undefined,$(origin STUDY)),$(filter undefined,$(origin DATA)))
DATA ?= $(if $(corpus_is_brown),data,data/$(CORPUS))
VOCAB ?= 2048
VALIDATION_FRACTION ?= 0.02
SEED ?= 42
FAST ?=
# The seeds: two by default, the most that keep `make` under 15 minutes on 2 cores (three
# took 18 min 15 s, docs/benchmarks.md "Pipelines"); another list gets its own study and
# report directories.
seeds_overridden := $(filter command% environment%,$(origin SEEDS))
SEEDS ?= $(if $(filter 1,$(FAST)),,42 43)
seeds_suffix := $(if $(seeds_overridden),$(if $(strip $(SEEDS)),-seeds,-1seed))

include pipelines/tools.mk
include pipelines/stamps.mk
$(call require_tools,tokenize shard)
.DEFAULT_GOAL := all
corpus_dir := $(DATA)/corpus/$(CORPUS)
corpus_flag := $(if $(corpus_is_brown),,--corpus $(CORPUS))
corpus_title := $(if $(corpus_is_brown),Brown corpus,$(CORPUS) corpus)
corpus := $(corpus_dir)/.complete
tokenizer := $(DATA)/micro/tokenizer.model
shards_dir := $(DATA)/micro/shards
manifest := $(shards_dir)/manifest.json
verified := $(shards_dir)/.verified

.PHONY: all data
all: data study
data: $(verified)

$(corpus):
	scripts/fetch-corpus $(strip $(corpus_flag) $(corpus_dir))

$(call sync_stamp,$(DATA)/micro/tokenizer.args,--vocab-size $(VOCAB) --seed $(SEED) $(corpus_flag))
$(call sync_stamp,$(DATA)/micro/shard.args,--seed $(SEED) --validation-fraction $(VALIDATION_FRACTION))

# The tokenizer learns from the training documents only.
$(tokenizer): $(corpus) $(DATA)/micro/tokenizer.args
	@mkdir -p $(@D)
	tokenize train-model $(corpus_dir)/train --vocab-size $(VOCAB) --seed $(SEED) -q -o $@

# encode | shard: a failing encoder leaves a truncated stream, which shard refuses.
$(manifest): $(tokenizer) $(DATA)/micro/shard.args
	tokenize encode -q -m $< $(corpus_dir)/train $(corpus_dir)/validation \
	  | shard write -q --tokenizer $< --seed $(SEED) --validation-fraction $(VALIDATION_FRACTION) $(if $(wildcard $(corpus_dir)/test),--test-input <(tokenize encode -q -m $< $(corpus_dir)/test)) -o $(@D)

$(verified): $(manifest)
	shard verify -q $(@D)
	shard inspect $(@D)
	@touch $@

# ---- the study -------------------------------------------------------------------
# CPU-sized (2 cores, under 30 minutes for the default grid): a 2048-token vocabulary,
# 64-token sequences, 2048-token batches, 1179648 tokens (576 steps, 0.64 epoch of the
# Brown training split) per run and a high learning rate so tiny models move off the
# unigram plateau in budget; the paper's Table 5 values stay train's defaults. Raise
# TOKENS for a study that means more.
# THREADS: one per run, and as many runs at once as there are cores (study.mk). At these
# widths a second thread speeds a run up by far less than 2x (docs/benchmarks.md,
# "Pipelines": 0.8-1.1x at W 16-64), so cores go further as parallel runs; the count is
# fixed, not derived from -j or nproc, so a run's losses are the same on any machine
# and at any -j. Raise it for a study with fewer runs than cores.
THREADS ?= 1
# Validation passes during training, for the report's training curves (16384 tokens,
# forward only: ~2% of a run at every 96 steps; training itself is unchanged by them).
VAL_EVERY ?= 96
# BLOCK_IMPL: train's --block-impl for every run. fused (train's hand-written block, one
# autograd node per block) is the faster at every shape of the default grid, 1 thread, so it
# is the default (docs/benchmarks.md: 1.58x aten per step at W16, 1.04x at W64; the study's
# training wall in "Pipelines"). It equals aten only up to rounding (1e-5 relative on the
# loss and gradients, tests/model/test_fused_block.cpp), so a study is one implementation
# throughout: BLOCK_IMPL=aten gives the studies made with the aten block (aten adds no flag,
# so their runs' stamps still match).
BLOCK_IMPL ?= fused
# KERNELS: train's --kernels for every run. fixed (the default): the same bits on every
# x86-64 CPU with AVX2+FMA (the kernel layer's AVX2 bodies, OpenBLAS's Haswell kernels,
# ATen's avx2 ones), so `make check-reproduced` can compare this machine's runs with the
# committed ones; native: the fastest kernels this CPU has (docs/benchmarks.md, "Kernel
# set"), numbers equal only on the same kind of CPU. It is in every run's stamp: a study
# never mixes the two.
KERNELS ?= fixed
ifeq ($(FAST),1)
GRID ?= pipelines/grids/micro-fast.grid
TOKENS ?= 16384
STUDY ?= $(DATA)/micro/study-fast
REPORT_DIR ?= $(STUDY)/report
PROBE_ARGS ?= -K 2 -B 2 -q --threads $(THREADS)
FIT_ARGS ?= -B 50 --no-loo
else
GRID ?= pipelines/grids/micro.grid
TOKENS ?= 1179648
STUDY ?= $(DATA)/micro/study$(seeds_suffix)
REPORT_DIR ?= $(if $(study_is_default),report$(seeds_suffix),$(STUDY)/report)
# the controls' verdict in the headline once `make controls` has written it
CONTROLS_STUDY ?= $(if $(and $(study_is_default),$(if $(seeds_suffix),,1)),report-controls/study.json)
PROBE_ARGS ?= -K 4 -B 4 -q --threads $(THREADS)
FIT_ARGS ?= -B 200
endif
SEQ_LEN ?= 64
BATCH_TOKENS ?= 2048
# TOKENS_PER_PARAM=20: each run's length is its own budget, 20 x its parameters (counted by
# TOKENS_PER_PARAM_COUNT: total | non-embedding | 12DW2; train --tokens-per-param), instead
# of TOKENS for every run (make chinchilla, pipelines/chinchilla.mk)
TOKENS_PER_PARAM ?=
TOKENS_PER_PARAM_COUNT ?= total
run_length = $(if $(TOKENS_PER_PARAM),--tokens-per-param $(TOKENS_PER_PARAM) --tokens-per-param-count $(TOKENS_PER_PARAM_COUNT),--tokens $(TOKENS))
TRAIN_ARGS ?= --seq-len $(SEQ_LEN) --head-dim 16 --batch-tokens $(BATCH_TOKENS) --micro-batch 32 \
  $(run_length) --lr 3e-3 --min-lr 3e-4 --warmup-fraction 0.05 --val-tokens 16384 --val-every $(VAL_EVERY) \
  --checkpoint-every 20 --keep-checkpoints 2 --seed $(SEED) --threads $(THREADS) \
  $(if $(filter-out aten,$(BLOCK_IMPL)),--block-impl $(BLOCK_IMPL)) --kernels $(KERNELS)
# TRAIN_EXTRA: flags appended to every run (study.mk; the last of a repeated flag wins),
# e.g. the controls study's --param completep ...
STUDY_TITLE ?= shapelaw micro-study: $(corpus_title), $(VOCAB)-token BPE, $(TOKENS) tokens per run
DATA_MANIFEST := $(manifest)
TOKENIZER_MODEL := $(tokenizer)
include pipelines/study.mk
