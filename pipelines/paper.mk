# The paper's full study: its 30 configurations (pipelines/grids/paper.grid: Table 9's
# 18 baseline runs and Table 10's 12 large runs) with vocabulary 50257 and the paper's
# Table 5 hyperparameters (train's defaults), on SlimPajama.
#
#   make -f pipelines/paper.mk SLIMPAJAMA_DIR=/data/SlimPajama-627B LAUNCH="torchrun --no-python --nproc-per-node=8"
#   make -n -f pipelines/paper.mk       # print the plan, run nothing
#
# LAUNCH wraps every `train` (empty: one process; torchrun for one node; srun for
# Slurm). Runs are independent: `make -j N` trains N at once, so on one 8-GPU node use
# either -j 8 with one GPU each (LAUNCH="" and CUDA_VISIBLE_DEVICES set per slot by
# your scheduler) or -j 1 with LAUNCH=torchrun over all 8. An interrupted make resumes
# every unfinished run from its newest checkpoint; finished runs are never retrained.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

SLIMPAJAMA_DIR ?= /data/SlimPajama-627B
PAPER ?= work/paper
VOCAB ?= 50257
TOKENIZER_SAMPLE_LINES ?= 10000000
# Which SlimPajama documents become tokens (default: all of train/). Restrict to
# chunks (e.g. "$(SLIMPAJAMA_DIR)/train/chunk1 $(SLIMPAJAMA_DIR)/train/chunk2") to
# encode only what the runs consume (the largest run reads ~142B tokens).
TRAIN_INPUTS ?= $(SLIMPAJAMA_DIR)/train
VALIDATION_FRACTION ?= 0.0005

include pipelines/stamps.mk
.DEFAULT_GOAL := all
tokenizer := $(PAPER)/tokenizer.model
manifest := $(PAPER)/shards/manifest.json

.PHONY: all data
all: study
data: $(manifest)

$(SLIMPAJAMA_DIR):
	@echo "paper.mk: SLIMPAJAMA_DIR=$(SLIMPAJAMA_DIR) does not exist (download SlimPajama-627B and set SLIMPAJAMA_DIR)" >&2; exit 1

$(call sync_stamp,$(PAPER)/tokenizer.args,--vocab-size $(VOCAB) --sample-lines $(TOKENIZER_SAMPLE_LINES))
$(call sync_stamp,$(PAPER)/shard.args,$(TRAIN_INPUTS) --validation-fraction $(VALIDATION_FRACTION))

$(tokenizer): $(PAPER)/tokenizer.args | $(SLIMPAJAMA_DIR)
	@mkdir -p $(@D)
	tokenize train-model $(SLIMPAJAMA_DIR)/train --vocab-size $(VOCAB) --sample-lines $(TOKENIZER_SAMPLE_LINES) -o $@

$(manifest): $(tokenizer) $(PAPER)/shard.args
	tokenize encode -q -m $< $(TRAIN_INPUTS) \
	  | shard write -q --tokenizer $< --validation-fraction $(VALIDATION_FRACTION) -o $(@D)

# The paper's Table 5 values are train's defaults (AdamW 0.9/0.95, wd 0.1, lr 3e-4
# cosine to 3e-5, 2000 warmup steps, clip 1.0, 256 x 1024 tokens, seed 42); bf16 on GPU.
GRID := pipelines/grids/paper.grid
STUDY := $(PAPER)/study
DATA_MANIFEST := $(manifest)
TOKENIZER := $(tokenizer)
TRAIN_ARGS ?= --device cuda --micro-batch 16 --warmup-steps 2000 --checkpoint-every 1000 --val-every 2000 --probe-steps 1001
PROBE_FROM ?= train-log
PROBE_LOG_STEP ?= 1001
FIT_ARGS ?= -B 1000
STUDY_TITLE ?= The Depth Delusion, rerun: the paper's 30 configurations on SlimPajama
include pipelines/study.mk
