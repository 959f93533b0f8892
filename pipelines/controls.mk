# make controls: does the micro-study's depth penalty survive a tuned learning rate and
# a depth-aware parameterization? Three arms on the embedded corpus, same data, tokens
# and schedule shape as the default study (pipelines/micro.mk):
#   1. sp-fixed   SP at the default study's learning rate (3e-3): today's study itself.
#                 Its runs are the default study's (data/micro/study/runs/R), reused when
#                 `make` has trained them and trained here (for `make` to reuse) if not;
#                 when a variable that shapes the default study's runs is overridden
#                 (TOKENS=, VOCAB=, ...), they go to $(CONTROLS)/sp-fixed instead, so the
#                 shipped study is never retrained under other settings.
#   2. sp-tuned   SP, best learning rate per configuration (arm 1's run is one of the values)
#   3. completep  CompleteP (alpha = 1, base shape CP_BASE), best base learning rate per configuration
# over pipelines/grids/controls.grid (the micro grid's W = 16 and 64 rows), then
# scripts/make-controls-report writes $(CONTROLS_REPORT)/README.md with plots.
#   make controls                       (budget: under 45 minutes on 2 cores, -j by nproc)
#   make controls-equal-n               the same plus the equal-parameter depth sweep
#                                       (controls-equal-n.grid; reuses every run above)
#   make controls SEEDS="42 43"         every run once per seed (the excess's SE from the seeds)
#   make -f pipelines/controls.mk SP_LRS="1e-3 3e-3 1e-2 3e-2" ...   one list for every row
#   make -n -f pipelines/controls.mk PAPER=1 SLIMPAJAMA_DIR=...   the same arms on the paper's grid
#                                       (pipelines/paper.mk, Table 5's lr 3e-4 in the middle of the sweep)
# The learning rates: a grid row "R D W sp=1e-2,3e-2,1e-1 completep=..." carries each arm's
# own list (pipelines/grids/controls.grid says how they were chosen); a row without one
# gets SP_DEFAULT_LRS / CP_DEFAULT_LRS; SP_LRS= / CP_LRS= replace every row's list. Each
# arm is a sub-make of micro.mk (its own study directory, the row's list expanded by
# scripts/study-grid into runs R-lr<value>, --min-lr-ratio 0.1 so every run decays to
# lr/10 as the default study does); runs are independent, so they share make's job slots
# at one thread each. Probes and the per-arm report are skipped: the controls report fits
# each arm itself.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

DATA ?= data
PAPER ?=
ifeq ($(PAPER),1)
# the paper's 30 configurations: base shape its smallest (2 x 256), lr around Table 5's 3e-4
STUDY_MK ?= pipelines/paper.mk
# paper.mk's own PAPER is its output directory, not this switch: the sub-makes get PAPER_DIR
PAPER_DIR ?= work/paper
study_mk_vars := PAPER=$(PAPER_DIR)
# paper.mk's TOKENIZER (gpt2 by default) picks the data: its controls are kept apart too
CONTROLS ?= $(PAPER_DIR)/controls$(if $(filter sentencepiece,$(TOKENIZER)),,-gpt2)
CONTROLS_REPORT ?= $(CONTROLS)/report
CONTROLS_GRID ?= pipelines/grids/paper.grid
SP_DEFAULT_LRS ?= 1e-4 3e-4 1e-3
CP_DEFAULT_LRS ?= 3e-4 1e-3 3e-3
FIXED_LR ?= 3e-4
CP_BASE ?= --base-width 256 --base-depth 2
RUN_ARGS ?= --min-lr-ratio 0.1
FIT_ARGS ?= -B 1000
# the paper study's own runs have another schedule: arm 1 is the FIXED_LR slice of arm 2
FIXED_STUDY ?=
else
STUDY_MK ?= pipelines/micro.mk
CONTROLS ?= $(DATA)/micro/controls
CONTROLS_REPORT ?= report-controls
CONTROLS_GRID ?= pipelines/grids/controls.grid
SP_DEFAULT_LRS ?= 1e-3 3e-3 1e-2 3e-2
CP_DEFAULT_LRS ?= 3e-3 1e-2 3e-2 1e-1
FIXED_LR ?= 3e-3
CP_BASE ?= --base-width 16 --base-depth 1
# One thread per run: at these shapes two runs at one thread each beat one run at two.
RUN_ARGS ?= --threads 1 --min-lr-ratio 0.1
FIT_ARGS ?= -B 200 --no-profile
# Arm 1 is the default study when nothing that shapes its runs was overridden.
study_vars := VOCAB VALIDATION_FRACTION SEED TOKENS THREADS VAL_EVERY BLOCK_IMPL KERNELS SEQ_LEN BATCH_TOKENS TRAIN_ARGS \
  TRAIN_EXTRA LRS SWEEP FAST LAUNCH FIXED_LR
overridden := $(strip $(foreach v,$(study_vars),$(if $(filter command% environment%,$(origin $(v))),$(v))))
FIXED_STUDY ?= $(if $(overridden),$(CONTROLS)/sp-fixed,$(DATA)/micro/study)
# the default study's seeds (micro.mk), so that arm 1 is its runs; their spread judges every arm
FIXED_SEEDS ?= $(if $(overridden),$(SEEDS),42 43)
endif
# the rows of arm 1: those of the default study's grid (its runs are the same runs)
FIXED_FROM_GRID ?= pipelines/grids/micro.grid
CP_ARGS ?= --param completep --depth-alpha 1 --eps-scope blocks $(CP_BASE)
SP_LRS ?=
CP_LRS ?=
SEEDS ?=
# arm 1 trains with the default study's own flags, or (in its own directory) at FIXED_LR
fixed_extra = $(if $(filter $(DATA)/micro/study%,$(FIXED_STUDY)),,$(RUN_ARGS) --lr $(FIXED_LR))

.PHONY: all controls arms fixed sp completep data equal-n
all controls: $(CONTROLS_REPORT)/README.md

include pipelines/tools.mk
# Arm grids for scripts/study-grid (which expands each row's --lr list into runs R-lr<value>);
# written under make -n too (+), so that a dry run can show the runs, but then into a
# scratch directory: a dry run writes nothing under CONTROLS.
grids := $(if $(dry_run),$(shell mktemp -d "$${TMPDIR:-/tmp}/shapelaw-dry-grids.XXXXXX"),$(CONTROLS))
fixed_grid := $(if $(FIXED_STUDY),$(grids)/sp-fixed.grid)
include pipelines/stamps.mk
# the report fits each arm itself (the arms' sub-makes check train and the rest)
$(call require_tools,fit-law)
# the arm grids' inputs as a stamp: another CONTROLS_GRID (an older file, say) or other
# lists rewrite them, whatever the files' times
$(call sync_stamp,$(CONTROLS)/grids.args,$(CONTROLS_GRID) $(FIXED_FROM_GRID) $(FIXED_STUDY) $(FIXED_LR) sp: $(SP_LRS) \
  / $(SP_DEFAULT_LRS) completep: $(CP_LRS) / $(CP_DEFAULT_LRS))
grid_deps := $(shell scripts/controls-grid files $(CONTROLS_GRID)) $(CONTROLS)/grids.args pipelines/controls.mk scripts/controls-grid
lrs_opt = $(if $(strip $(1)),--lrs "$(strip $(1))") --default-lrs "$(strip $(2))"
$(grids)/sp-fixed.grid: $(grid_deps) $(FIXED_FROM_GRID)
	+@mkdir -p $(@D); scripts/controls-grid fixed $(CONTROLS_GRID) --from $(FIXED_FROM_GRID) > $@.tmp && mv $@.tmp $@
$(grids)/sp/grid: $(grid_deps) $(fixed_grid)
	+@mkdir -p $(@D); scripts/controls-grid arm sp $(CONTROLS_GRID) $(call lrs_opt,$(SP_LRS),$(SP_DEFAULT_LRS)) \
	  $(if $(fixed_grid),--fixed-rows $(fixed_grid) --fixed-lr $(FIXED_LR)) > $@.tmp && mv $@.tmp $@
$(grids)/completep/grid: $(grid_deps)
	+@mkdir -p $(@D); scripts/controls-grid arm completep $(CONTROLS_GRID) $(call lrs_opt,$(CP_LRS),$(CP_DEFAULT_LRS)) > $@.tmp && mv $@.tmp $@

# study STUDY-DIR GRID TRAIN_EXTRA [SEEDS]: the runs of one arm, a sub-make of the study pipeline
study = +$(MAKE) --no-print-directory -f $(STUDY_MK) $(study_mk_vars) DATA=$(DATA) STUDY=$(1) GRID=$(2) \
  REPORT_DIR=$(1)/report SEEDS="$(if $(4),$(4),$(SEEDS))" TRAIN_EXTRA="$(3)" runs

# the data stage once, before the arms (sub-makes would race on it)
data:
	+$(MAKE) --no-print-directory -f $(STUDY_MK) $(study_mk_vars) DATA=$(DATA) data
fixed: $(fixed_grid) | data
	$(if $(fixed_grid),$(call study,$(FIXED_STUDY),$(fixed_grid),$(fixed_extra),$(FIXED_SEEDS)))
sp: $(grids)/sp/grid | data
	$(call study,$(CONTROLS)/sp,$(grids)/sp/grid,$(RUN_ARGS))
completep: $(grids)/completep/grid | data
	$(call study,$(CONTROLS)/completep,$(grids)/completep/grid,$(RUN_ARGS) $(CP_ARGS))
arms: fixed sp completep

$(CONTROLS_REPORT)/README.md: fixed sp completep scripts/make-controls-report
	scripts/make-controls-report --controls $(CONTROLS) --grid $(CONTROLS_GRID) --fixed-lr $(FIXED_LR) \
	  $(if $(fixed_grid),--fixed-study $(FIXED_STUDY) --fixed-grid $(fixed_grid)) \
	  --fit-args "$(FIT_ARGS)" --out $(CONTROLS_REPORT)

# The equal-parameter sweep: the default grid's runs plus four shapes, its own report.
EQUAL_N_GRID ?= pipelines/grids/controls-equal-n.grid
equal-n:
	+$(MAKE) --no-print-directory -f pipelines/controls.mk CONTROLS_GRID=$(EQUAL_N_GRID) \
	  CONTROLS_REPORT=$(CONTROLS_REPORT)-equal-n controls
