# make controls: does the micro-study's depth penalty survive a tuned learning rate and
# a depth-aware parameterization? Three arms on the embedded corpus, same data, tokens
# and schedule shape as the default study (pipelines/micro.mk):
#   1. sp-fixed   SP at the default study's learning rate (3e-3): the 3e-3 runs of arm 2
#   2. sp-tuned   SP, best of SP_LRS (4 values) per configuration
#   3. completep  CompleteP (alpha = 1, base shape CP_BASE), best of CP_LRS (4) base learning rates
# over pipelines/grids/controls.grid (the micro grid's W = 16 and 64 rows; controls-equal-n.grid
# adds W = 32 and an equal-parameter depth sweep),
# then scripts/make-controls-report writes $(CONTROLS_REPORT)/README.md with plots.
#   make controls                       (budget: under 45 minutes on 2 cores, -j by nproc)
#   make controls SEEDS="42 43"         every run once per seed (the excess's SE from the seeds)
#   make -f pipelines/controls.mk SP_LRS="1e-3 3e-3 1e-2 3e-2" ...
#   make -n -f pipelines/controls.mk PAPER=1 SLIMPAJAMA_DIR=...   the same arms on the paper's grid
#                                       (pipelines/paper.mk, Table 5's lr 3e-4 in the middle of the sweep)
# Each arm is a sub-make of micro.mk (its own study directory, one run per grid row and
# learning rate, named R-lr<value>, --min-lr-ratio 0.1 so every run decays to lr/10 as
# the default study does); runs are independent, so they share make's job slots at one
# thread each. Probes and the per-arm report are skipped: the controls report fits each
# arm itself.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

DATA ?= data
PAPER ?=
ifeq ($(PAPER),1)
# the paper's 30 configurations: base shape its smallest (2 x 256), lr around Table 5's 3e-4
STUDY_MK ?= pipelines/paper.mk
CONTROLS ?= work/paper/controls
CONTROLS_REPORT ?= $(CONTROLS)/report
CONTROLS_GRID ?= pipelines/grids/paper.grid
SP_LRS ?= 1e-4 3e-4 1e-3
CP_LRS ?= 3e-4 1e-3 3e-3
FIXED_LR ?= 3e-4
CP_BASE ?= --base-width 256 --base-depth 2
RUN_ARGS ?= --min-lr-ratio 0.1
FIT_ARGS ?= -B 1000
else
STUDY_MK ?= pipelines/micro.mk
CONTROLS ?= $(DATA)/micro/controls
CONTROLS_REPORT ?= report-controls
CONTROLS_GRID ?= pipelines/grids/controls.grid
# Four values each: with three (1e-3..1e-2, 3e-3..3e-2) the best was the largest for 6 and
# 8 of the 10 configurations, so each sweep gained a larger value.
SP_LRS ?= 1e-3 3e-3 1e-2 3e-2
CP_LRS ?= 3e-3 1e-2 3e-2 1e-1
FIXED_LR ?= 3e-3
CP_BASE ?= --base-width 16 --base-depth 1
# One thread per run: at these shapes two runs at one thread each beat one run at two.
RUN_ARGS ?= --threads 1 --min-lr-ratio 0.1
FIT_ARGS ?= -B 200 --no-profile
endif
CP_ARGS ?= --param completep --depth-alpha 1 $(CP_BASE)
SEEDS ?=

.PHONY: all controls arms sp completep data
all controls: $(CONTROLS_REPORT)/README.md

# A grid per arm: every row of CONTROLS_GRID once per learning rate.
sweep_grid = awk -v lrs="$(strip $(2))" '!/^[[:space:]]*(\#|$$)/ { n = split(lrs, lr, " "); \
  for (i = 1; i <= n; i++) { rest = ""; for (f = 4; f <= NF; f++) rest = rest " " $$f; \
    print $$1 "-lr" lr[i], $$2, $$3, "--lr", lr[i] rest } }' $(CONTROLS_GRID) > $(1).tmp && mv $(1).tmp $(1)

$(CONTROLS)/sp/grid: $(CONTROLS_GRID) pipelines/controls.mk
	@mkdir -p $(@D); $(call sweep_grid,$@,$(SP_LRS))
$(CONTROLS)/completep/grid: $(CONTROLS_GRID) pipelines/controls.mk
	@mkdir -p $(@D); $(call sweep_grid,$@,$(CP_LRS))

arm = +$(MAKE) --no-print-directory -f $(STUDY_MK) DATA=$(DATA) STUDY=$(CONTROLS)/$(1) GRID=$(CONTROLS)/$(1)/grid \
  REPORT_DIR=$(CONTROLS)/$(1)/report SEEDS="$(SEEDS)" TRAIN_EXTRA="$(RUN_ARGS) $(2)" runs

# the data stage once, before the arms (two sub-makes would race on it)
data:
	+$(MAKE) --no-print-directory -f $(STUDY_MK) DATA=$(DATA) data
sp: $(CONTROLS)/sp/grid | data
	$(call arm,sp,)
completep: $(CONTROLS)/completep/grid | data
	$(call arm,completep,$(CP_ARGS))
arms: sp completep

$(CONTROLS_REPORT)/README.md: sp completep scripts/make-controls-report
	scripts/make-controls-report --controls $(CONTROLS) --grid $(CONTROLS_GRID) --fixed-lr $(FIXED_LR) \
	  --fit-args "$(FIT_ARGS)" --out $(CONTROLS_REPORT)
