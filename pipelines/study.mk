# The study, generic over a grid: train every run of $(GRID), probe its gradients,
# fit the laws, audit, report. Included by micro.mk and paper.mk, which set:
#   GRID          grid file: "run depth width [extra train flags]" per line
#   DATA_MANIFEST shard manifest.json (a make target of the including file, or a file)
#   TOKENIZER     sentencepiece model the shards were made with
#   TRAIN_ARGS    train flags shared by every run
#   STUDY         output directory (runs/, results/, report/ inside)
# and may set LAUNCH (e.g. "torchrun --no-python --nproc-per-node=8"), PROBE_ARGS,
# PROBE_MIN_DEPTH, FIT_ARGS, AUDIT_ARGS, STUDY_TITLE, SEEDS.
#
# SEEDS="42 43 44": every grid row R runs once per seed, as runs R-s42, R-s43, ... with
# --seed S --run-group R; fit-law then measures the seed-to-seed spread and tests each
# law's lack of fit against it. Empty (default): one run per row, seeded by TRAIN_ARGS.
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
.SECONDARY:
include pipelines/stamps.mk

LAUNCH ?=
PROBE_ARGS ?= -K 4 -B 4 -q
PROBE_MIN_DEPTH ?= 3
FIT_ARGS ?=
AUDIT_ARGS ?=
STUDY_TITLE ?= shapelaw study

runs_dir := $(STUDY)/runs
results := $(STUDY)/results
REPORT_DIR ?= $(STUDY)/report
report := $(REPORT_DIR)

# The grid, declared once: run names, then per-run flags looked up by name.
SEEDS ?=
grid_rows = awk -v seeds="$(strip $(SEEDS))" '!/^[[:space:]]*(\#|$$)/ { \
  n = split(seeds, seed, " "); if (n == 0) { print; next } \
  for (i = 1; i <= n; i++) { row = $$0; sub(/^[[:space:]]*[^[:space:]]+/, $$1 "-s" seed[i], row); \
    print row " --seed " seed[i] " --run-group " $$1 } }' $(GRID)
runs := $(shell $(grid_rows) | awk '{print $$1}')
probed_runs := $(shell $(grid_rows) | awk '$$2 >= $(PROBE_MIN_DEPTH) {print $$1}')
run_flags = $(shell $(grid_rows) | awk -v r=$(1) '$$1 == r {printf "--depth %s --width %s", $$2, $$3; for (i = 4; i <= NF; i++) printf " %s", $$i}')

summaries := $(runs:%=$(runs_dir)/%/summary.json)
grad_fits := $(probed_runs:%=$(runs_dir)/%/grad_fit.json)

.PHONY: study runs probes fit audit report
study: report
runs: $(summaries)
probes: $(grad_fits)
fit: $(results)/fit.json
audit: $(results)/audit.md

train_command = $(LAUNCH) train --out $(runs_dir)/$(1) --run-id $(1) $(TRAIN_ARGS) $(call run_flags,$(1)) \
  --data $(dir $(DATA_MANIFEST)) --tokenizer-model $(TOKENIZER)

$(foreach r,$(runs),$(call sync_stamp,$(runs_dir)/$(r)/train.args,$(call train_command,$(r)),$(r)))
$(call sync_stamp,$(results)/probe.args,$(PROBE_ARGS) $(PROBE_FROM) $(PROBE_LOG_STEP))
$(call sync_stamp,$(results)/fit.args,$(FIT_ARGS))
$(call sync_stamp,$(results)/audit.args,$(AUDIT_ARGS))

# train resumes from the newest complete checkpoint in the run directory by itself.
# New data (another manifest) invalidates the run's checkpoints: wipe them first.
$(runs_dir)/%/summary.json: $(runs_dir)/%/train.args $(DATA_MANIFEST)
	@data=$$(sha256sum < $(DATA_MANIFEST) | cut -c1-64); \
	if [ -f $(@D)/data.sha256 ] && [ "$$(cat $(@D)/data.sha256)" != "$$data" ]; then \
	  echo "study: $*: the data changed: retraining from scratch" >&2; \
	  find $(@D) -mindepth 1 -not -name train.args -delete; fi; \
	echo "$$data" > $(@D)/data.sha256
	$(call train_command,$*) 2>> $(@D)/train.log || { tail -5 $(@D)/train.log >&2; exit 1; }

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
	  echo "fit-law --tau --skip-bad-rows $< -o $(results)/tau-fit.json --format markdown > $@"; \
	  fit-law --tau --skip-bad-rows $< -o $(results)/tau-fit.json --predictions $(results)/tau-predictions.csv --format markdown > $@; \
	else \
	  rm -f $(results)/tau-fit.json; \
	  echo "_No τ(W) fit: only $$usable run(s) have a finite persistence length τ (the others show no exponential decay of gradient norms towards the input; see their flags in the τ table), and the fit needs at least 3._" > $@; \
	fi

$(results)/fit.json: $(summaries) $(results)/fit.args
	@mkdir -p $(@D)
	fit-law $(FIT_ARGS) $(summaries) -o $@ --predictions $(results)/predictions.csv --format markdown > $(results)/fit.md

# The fitted law's D_crit comes from its best model with a depth penalty; a fit in
# which no such model could be fitted (e.g. depth does not vary) gets a note instead.
$(results)/audit.md: $(results)/fit.json $(results)/audit.args
	audit examples/flagship-models.csv --law paper-log $(AUDIT_ARGS) -o $(results)/audit-paper-constants.md
	@model=$$(jq -r '.selected_phi_model // empty' $<); \
	if [ -n "$$model" ]; then \
	  echo "audit examples/flagship-models.csv --law $< --model $$model $(AUDIT_ARGS) -o $@"; \
	  audit examples/flagship-models.csv --law $< --model $$model $(AUDIT_ARGS) -o $@; \
	else \
	  echo "_No law with a critical depth was fitted (see the fitted laws: skipped or not identifiable models), so there is no fitted D_crit to audit with._" > $@; \
	fi

$(report)/README.md: $(results)/fit.json $(results)/tau-fit.md $(results)/audit.md scripts/make-report
	scripts/make-report --title "$(STUDY_TITLE)" --study $(STUDY) --grid $(GRID) --out $(report)

report: $(report)/README.md

