# make chinchilla: the paper's protocol in miniature. Every configuration of the micro
# grid trains on its own budget, TOKENS_PER_PARAM (20, Chinchilla's) x its parameters,
# instead of the default study's 1.18M tokens for all, in two arms:
#   sp         SP at each configuration's best lr of the controls study (the grid's sp=)
#   completep  CompleteP (alpha = 1, base shape W16 D1) at its best base lr (completep=)
# Each arm is a sub-make of pipelines/micro.mk (the same data, tokenizer, schedule shape,
# fit, τ probes, audit and report as `make`): its runs, fit and report under
# $(CHINCHILLA)/ARM, its report in $(CHINCHILLA_REPORT)/ARM/, and
# scripts/make-chinchilla-report writes $(CHINCHILLA_REPORT)/README.md: the budget table
# (run, D, W, N, tokens, tokens/param, epochs of the training split, lr, val loss) and each
# arm's verdict.
#   make chinchilla                        (45 min on 2 cores from a clean clone, docs/benchmarks.md)
#   make chinchilla TOKENS_PER_PARAM=10    another budget (its own directories)
#   make chinchilla TOKENS_PER_PARAM_COUNT=non-embedding   N counted without the embedding
#   make chinchilla CHINCHILLA_GRID=pipelines/grids/chinchilla-full.grid   W64 D8, D16 too (~3 h)
# The parameter count (TOKENS_PER_PARAM_COUNT): total by default, Hoffmann et al.'s N (the
# 20-tokens rule was fitted on total parameters); at this scale the embedding is most of a
# shallow model (W16 D1: 65536 of 68704), so the non-embedding count would give the
# shallow runs 30-60 steps. The paper is silent on which N its budget counts.
# The corpus is public-domain English prose by default (CORPUS=pd-prose, docs/corpus.md:
# 11.1M training tokens, so every run of the shipped grid sees its budget in under one pass,
# W64 D4 0.83 of it; the full grid's W64 D16 1.9 passes), in its own DATA (data/pd-prose:
# corpus, a tokenizer trained on it, shards, runs). The paper trains one pass; Brown's 1.84M
# tokens would be seen up to 5 times (W64 D4).
#   make chinchilla CORPUS=brown           the default study's corpus (report-chinchilla-brown/;
#                                          the report gives every run's epochs)
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

CORPUS ?= pd-prose
corpus_is_brown := $(filter brown,$(CORPUS))
corpus_is_default := $(filter pd-prose,$(CORPUS))
DATA ?= $(if $(corpus_is_brown),data,data/$(CORPUS))
TOKENS_PER_PARAM ?= 20
TOKENS_PER_PARAM_COUNT ?= total
# another budget or count gets its own directories (the shipped report is the default one's)
budget_default := $(and $(filter 20,$(TOKENS_PER_PARAM)),$(filter total,$(TOKENS_PER_PARAM_COUNT)))
budget_suffix := $(if $(budget_default),,-$(TOKENS_PER_PARAM)$(TOKENS_PER_PARAM_COUNT))
CHINCHILLA ?= $(DATA)/micro/chinchilla$(budget_suffix)
CHINCHILLA_REPORT ?= report-chinchilla$(budget_suffix)$(if $(corpus_is_default),,-$(CORPUS))
corpus_title := $(if $(corpus_is_brown),Brown,$(CORPUS))
CHINCHILLA_GRID ?= pipelines/grids/chinchilla.grid
CP_ARGS ?= --param completep --depth-alpha 1 --eps-scope blocks --base-width 16 --base-depth 1
# One thread per run (as the controls); checkpoints every 250 steps, not the default
# study's 20 (these runs are up to 4500 steps); every run decays to lr/10.
RUN_ARGS ?= --threads 1 --min-lr-ratio 0.1 --checkpoint-every 250
# one seed: the budget allows no replicates on 2 cores (SEEDS="42 43" for them)
SEEDS ?=
STUDY_MK ?= pipelines/micro.mk

.PHONY: all chinchilla data sp completep
all chinchilla: $(CHINCHILLA_REPORT)/README.md

include pipelines/tools.mk
include pipelines/stamps.mk
$(call require_tools,jq)
$(call sync_stamp,$(CHINCHILLA)/grids.args,$(CHINCHILLA_GRID))
grid_deps := $(CHINCHILLA_GRID) $(CHINCHILLA)/grids.args pipelines/chinchilla.mk scripts/controls-grid
# arm grids, written under make -n too (+), so that a dry run shows the runs
$(CHINCHILLA)/%/grid: $(grid_deps)
	+@mkdir -p $(@D); scripts/controls-grid arm $* $(CHINCHILLA_GRID) --default-lrs 3e-3 > $@.tmp && mv $@.tmp $@

# arm ARM EXTRA: its runs, τ probes, fit and report, a sub-make of the study pipeline
arm = +$(MAKE) --no-print-directory -f $(STUDY_MK) CORPUS=$(CORPUS) DATA=$(DATA) STUDY=$(CHINCHILLA)/$(1) GRID=$(CHINCHILLA)/$(1)/grid \
  REPORT_DIR=$(CHINCHILLA_REPORT)/$(1) SEEDS="$(SEEDS)" TOKENS_PER_PARAM=$(TOKENS_PER_PARAM) \
  TOKENS_PER_PARAM_COUNT=$(TOKENS_PER_PARAM_COUNT) \
  STUDY_TITLE="shapelaw chinchilla ($(1)): $(corpus_title), $(TOKENS_PER_PARAM) tokens per $(TOKENS_PER_PARAM_COUNT) parameter" \
  TRAIN_EXTRA="$(2)" study

# the data stage once, before the arms (sub-makes would race on it)
data:
	+$(MAKE) --no-print-directory -f $(STUDY_MK) CORPUS=$(CORPUS) DATA=$(DATA) data
sp: $(CHINCHILLA)/sp/grid | data
	$(call arm,sp,$(RUN_ARGS))
completep: $(CHINCHILLA)/completep/grid | data
	$(call arm,completep,$(RUN_ARGS) $(CP_ARGS))

$(CHINCHILLA_REPORT)/README.md: sp completep scripts/make-chinchilla-report
	scripts/make-chinchilla-report --chinchilla $(CHINCHILLA) --report $(CHINCHILLA_REPORT) \
	  --manifest $(DATA)/micro/shards/manifest.json --tokens-per-param $(TOKENS_PER_PARAM) \
	  --count $(TOKENS_PER_PARAM_COUNT) --corpus $(corpus_title)
