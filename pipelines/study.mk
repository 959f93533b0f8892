# The study, generic over a grid: train every run of $(GRID), probe its gradients,
# fit the laws, audit, report. Included by micro.mk and paper.mk, which set:
#   GRID          grid file: "run depth width [extra train flags]" per line
#   DATA_MANIFEST shard manifest.json (a make target of the including file, or a file)
#   TOKENIZER_MODEL the tokenizer the shards were made with (sentencepiece model or GPT-2 directory)
#   TRAIN_ARGS    train flags shared by every run
#   STUDY         output directory (runs/, results/, report/ inside)
# and may set LAUNCH (e.g. "torchrun --standalone --no_python --nproc_per_node=8"), RUN_PREFIX (a
# wrapper before LAUNCH that is not part of the run's identity, e.g. a GPU-slot
# chooser), TRAIN_EXTRA (flags appended to TRAIN_ARGS), PROBE_ARGS, PROBE_MIN_DEPTH,
# FIT_ARGS, AUDIT_ARGS, STUDY_TITLE, SEEDS, LRS, SWEEP, LENIENT, STUDY_JOBS, V.
#
# The grid is checked before anything runs (scripts/study-grid: file:line for every
# error; a grid whose width does not vary is refused unless LENIENT=1) and expanded:
# SEEDS="42 43 44": every grid row R runs once per seed, as runs R-s42, R-s43, ... with
# --seed S --run-group R; fit-law then measures the seed-to-seed spread and tests each
# law's lack of fit against it. Empty (default): one run per row, seeded by TRAIN_ARGS.
# LRS="1e-3 3e-3 1e-2" (or a row's own "--lr 1e-3,3e-3,1e-2"; SWEEP="weight-decay=0,0.1"
# for other flags): one run per value, R-lr1e-3 ..., composing with SEEDS
# (R-lr1e-3-s42, group R-lr1e-3); the fit keeps per configuration the best value
# (fit-law --best-of lr) and the report flags bests at the edge of the sweep.
#
# Runs are independent and go in parallel: without -j, make runs STUDY_JOBS (default:
# nproc) at once, longest first; under a parent make -jN they share its job slots. A
# run's results do not depend on -j: its thread count is in its own flags (TRAIN_ARGS).
# The terminal gets a line per run as it starts and ends (validation loss, minutes,
# the study's ETA; a live line while stderr is a terminal) and the verdict at the end;
# train's own output goes to runs/R/train.log, which starts with the full command
# (V=1 echoes the commands on the terminal too).
#
# Incremental semantics: a run's stamp (runs/R/train.args) holds its full train
# command and is rewritten only when it changes; a changed stamp, or a changed data
# manifest, wipes that run and retrains it. summary.json appears only when a run
# finishes (train writes it atomically), so an interrupted make resumes the run from
# its newest checkpoint and never restarts finished runs. Fit, audit and report
# depend on the summaries and on their own option stamps.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:
include pipelines/tools.mk
include pipelines/stamps.mk
# (the data stage alone, `make -f pipelines/micro.mk data`, needs no trainer)
study_goals := $(filter-out data,$(or $(MAKECMDGOALS),all))
$(if $(study_goals),$(call require_tools,train probe-grads fit-law audit jq gnuplot))

LAUNCH ?=
RUN_PREFIX ?=
TRAIN_EXTRA ?=
PROBE_ARGS ?= -K 4 -B 4 -q
PROBE_MIN_DEPTH ?= 3
FIT_ARGS ?=
AUDIT_ARGS ?=
STUDY_TITLE ?= shapelaw study
SEEDS ?=
LRS ?=
SWEEP ?=
LENIENT ?=
STUDY_JOBS ?= $(shell nproc)
V ?=

# Parallel by default. An explicit -jN (also -j1) on the command line wins over this
# line; a parent make's job server (seen in the MAKEFLAGS it exported: make 4.3 fills
# its own MAKEFLAGS only after reading the makefiles) is shared, not replaced.
ifeq ($(filter -j% --jobserver%,$(shell printenv MAKEFLAGS)),)
MAKEFLAGS += -j$(STUDY_JOBS)
endif
# the job slots, as make runs the recipes (-j alone: no limit)
jobs = $(or $(patsubst -j%,%,$(lastword $(filter -j%,$(MAKEFLAGS)))),$(words $(todo)))
Q := $(if $(V),,@)

runs_dir := $(STUDY)/runs
# A finished run's outputs are never deleted by make (train and probe-grads write them
# atomically, so an interrupted recipe leaves none half-written). Not .SECONDARY: that
# would let a deleted output in the middle of the chain (results/fit.json) stay missing.
.PRECIOUS: $(runs_dir)/%/summary.json $(runs_dir)/%/grad_fit.json
results := $(STUDY)/results
REPORT_DIR ?= $(STUDY)/report
report := $(REPORT_DIR)

# The grid, read once (scripts/study-grid plan): it stops make here on any error,
# before a stamp is touched. Each run is one word, "run^NAME^DEPTH^WIDTH^COST^FLAGS...",
# most expensive first (the order make starts them in); "swept^KEY" per swept flag.
include pipelines/grid.mk
grid_opts := --train-args '$(strip $(TRAIN_ARGS) $(TRAIN_EXTRA))' $(grid_expand_opts) $(if $(LENIENT),--lenient)
grid_plan := $(shell $(with_path) scripts/study-grid plan $(GRID) $(grid_opts) | tr ' ' '^')
ifeq ($(filter ok,$(grid_plan)),)
$(error $(GRID): the grid has errors (above); nothing was run)
endif
grid_runs := $(filter run^%,$(grid_plan))
grid_row = $(subst ^, ,$(filter run^$(1)^%,$(grid_runs)))
runs := $(foreach r,$(grid_runs),$(word 2,$(subst ^, ,$(r))))
probed_runs := $(shell for r in $(grid_runs); do IFS=^ read -r _ name depth _ <<<"$$r"; \
  [ "$$depth" -lt $(PROBE_MIN_DEPTH) ] || echo "$$name"; done)
run_flags = --depth $(word 3,$(call grid_row,$(1))) --width $(word 4,$(call grid_row,$(1))) $(wordlist 6,999,$(call grid_row,$(1)))
swept := $(sort $(patsubst swept^%,%,$(filter swept^%,$(grid_plan))))
# With a sweep the fit keeps, per configuration, the runs of the best value of the swept
# flag (fit-law --best-of takes one key: lr when it is swept; runs that differ in another
# swept flag are then fitted as configurations of their own).
best_of := $(if $(filter lr,$(swept)),lr,$(firstword $(swept)))
$(if $(word 2,$(swept)),$(warning $(GRID): several flags swept ($(swept)): the fit keeps the best $(best_of) per configuration; the other sweeps stay separate configurations))
# D_crit(W) with bootstrap CIs at the grid's widths and around them (the report's panel).
dcrit_widths := $(patsubst dcrit_widths^%,%,$(filter dcrit_widths^%,$(grid_plan)))
# (after the inputs: a list option would take the summaries that follow it as widths)
dcrit_opt := $(if $(dcrit_widths),--dcrit-widths $(dcrit_widths))
fit_args = $(FIT_ARGS) $(if $(best_of),--best-of $(best_of))

summaries := $(runs:%=$(runs_dir)/%/summary.json)
grad_fits := $(probed_runs:%=$(runs_dir)/%/grad_fit.json)

.PHONY: study runs probes fit audit report
study: report
runs: $(summaries)
probes: $(grad_fits)
fit: $(results)/fit.json
audit: $(results)/audit.md

train_command = $(LAUNCH) train --out $(runs_dir)/$(1) --run-id $(1) $(TRAIN_ARGS) $(TRAIN_EXTRA) $(call run_flags,$(1)) \
  --data $(dir $(DATA_MANIFEST)) --tokenizer-model $(TOKENIZER_MODEL)

# Only a make that goes past the data stage syncs them: `make data` under other settings
# (a sub-make of make controls TOKENS=..., say) must never wipe this study's runs.
ifneq ($(study_goals),)
$(foreach r,$(runs),$(call sync_stamp,$(runs_dir)/$(r)/train.args,$(call train_command,$(r)),$(r)))
$(call sync_stamp,$(results)/probe.args,$(PROBE_ARGS) $(PROBE_FROM) $(PROBE_LOG_STEP))
$(call sync_stamp,$(results)/fit.args,$(fit_args) $(dcrit_opt))
$(call sync_stamp,$(results)/audit.args,$(AUDIT_ARGS))
endif

# The runs this make will train (a changed stamp has already wiped its run), for the
# progress lines: "NAME:DEPTH:WIDTH:COST", in start order.
todo := $(foreach r,$(runs),$(if $(wildcard $(runs_dir)/$(r)/summary.json),,$(r)))
progress = $(if $(dry_run),,@scripts/study-progress $(1))
.PHONY: progress-begin
progress-begin:
	$(call progress,begin $(STUDY) $(jobs) $(foreach r,$(todo),$(subst $(space),:,$(wordlist 2,5,$(call grid_row,$(r))))))
	$(if $(dry_run),,@scripts/study-progress monitor $(STUDY) $$PPID &)

# train resumes from the newest complete checkpoint in the run directory by itself.
# New data (another manifest) invalidates the run's checkpoints: wipe them first.
$(runs_dir)/%/summary.json: $(runs_dir)/%/train.args $(DATA_MANIFEST) | progress-begin
	@data=$$(sha256sum < $(DATA_MANIFEST) | cut -c1-64); \
	if [ -f $(@D)/data.sha256 ] && [ "$$(cat $(@D)/data.sha256)" != "$$data" ]; then \
	  echo "study: $*: the data changed: retraining from scratch" >&2; \
	  find $(@D) -mindepth 1 -not -name train.args -delete; fi; \
	echo "$$data" > $(@D)/data.sha256
	$(call progress,start $(STUDY) $*)
	$(Q)$(RUN_PREFIX) $(call train_command,$*) 2>> $(@D)/train.log || { scripts/study-progress fail $(STUDY) $*; exit 1; }
	$(call progress,end $(STUDY) $*)

# PROBE_FROM=checkpoint: probe-grads measures the final checkpoint on validation
# batches; PROBE_FROM=train-log: fit the per-layer norms train logged at
# PROBE_LOG_STEP (set --probe-steps in TRAIN_ARGS; the paper's "after 1000 steps").
PROBE_FROM ?= checkpoint
PROBE_LOG_STEP ?= 1001
$(runs_dir)/%/grad_fit.json: $(runs_dir)/%/summary.json $(results)/probe.args
ifeq ($(PROBE_FROM),train-log)
	probe-grads fit --train-log $(@D)/grad_norms.csv --log-step $(PROBE_LOG_STEP) -o $@ > $(@D)/grad_fit.txt
else
	probe-grads measure $(@D) $(PROBE_ARGS) -o $(@D)/grad_probe
	probe-grads fit $(@D)/grad_probe -o $@ > $(@D)/grad_fit.txt
endif


$(results)/tau.csv: $(grad_fits)
	@mkdir -p $(@D)
	probe-grads summarize $(grad_fits) -o $@

# Runs whose gradients do not decay (no finite τ) stay in tau.csv, flagged; the τ(W)
# fit needs at least three runs with a finite τ, else the report says why there is none.
$(results)/tau-fit.md: $(results)/tau.csv $(results)/fit.args
	@usable=$$(awk -F, 'NR > 1 && $$5 != "" && $$5 != "inf"' $< | wc -l); \
	if [ "$$usable" -ge 3 ]; then \
	  echo "fit-law --tau --skip-bad-rows $< -o $(results)/tau-fit.json --predictions $(results)/tau-predictions.csv --format markdown > $@"; \
	  fit-law --tau --skip-bad-rows $< -o $(results)/tau-fit.json --predictions $(results)/tau-predictions.csv --format markdown > $@; \
	else \
	  rm -f $(results)/tau-fit.json; \
	  echo "_No τ(W) fit: only $$usable run(s) have a finite persistence length τ (the others show no exponential decay of gradient norms towards the input; see their flags in the τ table), and the fit needs at least 3._" > $@; \
	fi

$(results)/fit.json: $(summaries) $(results)/fit.args
	@mkdir -p $(@D)
	fit-law $(fit_args) $(summaries) $(dcrit_opt) -o $@ --predictions $(results)/predictions.csv --format markdown > $(results)/fit.md

# The fitted law's D_crit comes from its best model with a depth penalty, and only its D_crit
# (--dcrit-only: a law fitted on small models gives no verdict, redesign or ΔL for flagships;
# those come from the paper's constants); a fit in which no such model could be fitted (e.g.
# depth does not vary) gets a note instead.
$(results)/audit.md: $(results)/fit.json $(results)/audit.args
	audit examples/flagship-models.csv --law paper-log $(AUDIT_ARGS) -o $(results)/audit-paper-constants.md
	@model=$$(jq -r '.selected_phi_model // empty' $<); \
	if [ -n "$$model" ]; then \
	  echo "audit examples/flagship-models.csv --law $< --model $$model --dcrit-only $(AUDIT_ARGS) -o $@"; \
	  audit examples/flagship-models.csv --law $< --model $$model --dcrit-only $(AUDIT_ARGS) -o $@; \
	else \
	  echo "_No law with a critical depth was fitted (see the fitted laws: skipped or not identifiable models), so there is no fitted D_crit to audit with._" > $@; \
	fi

# CONTROLS_STUDY: a controls study.json (make controls) whose verdict the headline quotes.
controls_study := $(wildcard $(CONTROLS_STUDY))
$(report)/README.md: $(results)/fit.json $(results)/tau-fit.md $(results)/audit.md scripts/make-report $(controls_study)
	scripts/make-report --title "$(STUDY_TITLE)" --study $(STUDY) --grid $(GRID) --out $(report)$(if $(controls_study), --controls $(controls_study))

# The closing block on the terminal, also when the report was already up to date.
report: $(report)/README.md
	$(call progress,verdict $(report))

