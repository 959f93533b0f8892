# Fit and audit from existing results only: no training, no LibTorch.
#
#   make -f pipelines/refit.mk RUNS="runs/ more/summary.json table.csv" [FIT_ARGS=...] [OUT=...]
#
# RUNS: summary.json files, directories searched for them, and CSV/JSONL tables (see
# `fit-law --help` for column mapping, e.g. FIT_ARGS="--col loss=val_loss").
# Writes OUT/fit.json, OUT/fit.md, OUT/predictions.csv, OUT/audit.md and OUT/README.md.
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:
include pipelines/tools.mk
$(call require_tools,fit-law audit jq)

RUNS ?= examples/paper/paper30.csv
OUT ?= work/refit
FIT_ARGS ?=
AUDIT_ARGS ?=
MODELS ?= examples/flagship-models.csv

# Every input file, so editing or adding one refits.
inputs := $(shell for r in $(RUNS); do if [ -d "$$r" ]; then find "$$r" -name summary.json; else echo "$$r"; fi; done | sort)

.PHONY: all fit audit FORCE
all: $(OUT)/README.md
fit: $(OUT)/fit.json
audit: $(OUT)/audit.md

$(OUT)/fit.args: FORCE
	@mkdir -p $(@D); new="$(FIT_ARGS) $(inputs)"; \
	[ "$$(cat $@ 2>/dev/null)" = "$$new" ] || printf '%s\n' "$$new" > $@

$(OUT)/fit.json: $(inputs) $(OUT)/fit.args
	fit-law $(FIT_ARGS) $(inputs) -o $@ --predictions $(OUT)/predictions.csv --format markdown > $(OUT)/fit.md

$(OUT)/audit.md: $(OUT)/fit.json
	@model=$$(jq -r '.selected_phi_model // empty' $<); \
	if [ -n "$$model" ]; then \
	  echo "audit $(MODELS) --law $< --model $$model $(AUDIT_ARGS) -o $@"; \
	  audit $(MODELS) --law $< --model $$model $(AUDIT_ARGS) -o $@; \
	else echo "_No law with a critical depth was fitted, so there is no fitted D_crit to audit with._" > $@; fi

$(OUT)/README.md: $(OUT)/fit.json $(OUT)/audit.md
	{ echo "# Refit of $(RUNS)"; echo; cat $(OUT)/fit.md; echo; echo "## Audit with the fitted law"; echo; cat $(OUT)/audit.md; } > $@.tmp
	mv $@.tmp $@

FORCE:
