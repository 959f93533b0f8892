# Refit the paper's own tables (examples/paper/) with fit-law and print the paper's
# claimed values side by side with ours, with a sentence for every mismatch.
# Run by `make refit-paper` (tools from build/bin, pipelines/tools.mk). Outputs go to $(OUT)/.
#   make refit-paper B=200      fewer bootstrap resamples (default 1000)
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:
include pipelines/tools.mk
$(call require_tools,fit-law)

OUT ?= report/refit-paper
B ?= 1000
SEED ?= 42
PAPER := examples/paper
FIT := fit-law -B $(B) --seed $(SEED)
# refit when the tool itself was rebuilt
FITLAW_BIN := $(shell $(with_path) command -v fit-law)

# The paper's method (§4.2): nonlinear least squares (LM) in loss space, Φ as §3.4
# defines it, N = 12·D·W² (§3.1), all 30 runs; Table 10's token counts are not given,
# paper30.csv assumes 20 tokens per listed parameter (see NOTES.md).
PAPER_FIT := --loss ls --space loss --phi absolute --n 12dw2

fits := paper paper-relative paper-no-tokens huber-log table9 held held-relative tau
csvs := $(fits:%=$(OUT)/%.csv)

.PHONY: all
all: $(OUT)/comparison.txt
	@cat $<

$(OUT)/.dir:
	@mkdir -p $(OUT) && touch $@

$(csvs): $(FITLAW_BIN)

# 1. the paper's method on all 30 runs
$(OUT)/paper.csv: $(PAPER)/paper30.csv $(OUT)/.dir
	$(FIT) $< $(PAPER_FIT) -o $(OUT)/paper.json --predictions $(OUT)/paper-predictions.csv --format csv > $@

# 2. Φ as appendix A.2's marginal penalty implies: γ·max(0, D−D_crit)/(W^μ·D_crit)
$(OUT)/paper-relative.csv: $(PAPER)/paper30.csv $(OUT)/.dir
	$(FIT) $< --loss ls --space loss --phi relative --n 12dw2 -m paper-log,paper-power,no-phi \
	  -o $(OUT)/paper-relative.json --format csv > $@

# 3. without the assumed Table 10 token counts: the data term is not identifiable
$(OUT)/paper-no-tokens.csv: $(PAPER)/paper30.csv $(OUT)/.dir
	$(FIT) $< $(PAPER_FIT) --col tokens=none -m paper-log,paper-power,no-phi,kaplan,kaplan-E \
	  -o $(OUT)/paper-no-tokens.json --format csv > $@

# 4. the field's practice: Huber(1e-3) on log residuals (fit-law's default objective)
$(OUT)/huber-log.csv: $(PAPER)/paper30.csv $(OUT)/.dir
	$(FIT) $< --n 12dw2 -o $(OUT)/huber-log.json --format csv > $@

# 5. Table 9 alone (one token count: the data term collapses to a constant)
$(OUT)/table9.csv: $(PAPER)/table9.csv $(OUT)/.dir
	$(FIT) $< $(PAPER_FIT) --col tokens=tokens_b*1e9 -m paper-log,no-phi,kaplan-E \
	  -o $(OUT)/table9.json --format csv > $@

# 6. the published Table 1 values held fixed (A, B, δ refitted): how well do they fit?
$(OUT)/held.csv: $(PAPER)/paper30.csv $(OUT)/.dir
	$(FIT) $< $(PAPER_FIT) -m paper-log --fix kappa=2.43 --fix alpha=0.22 --fix gamma=0.18 --fix mu=0.35 \
	  --no-loo -o $(OUT)/held.json --format csv > $@
$(OUT)/held-relative.csv: $(PAPER)/paper30.csv $(OUT)/.dir
	$(FIT) $< --loss ls --space loss --phi relative --n 12dw2 -m paper-log --fix kappa=2.43 --fix alpha=0.22 --fix gamma=0.18 \
	  --fix mu=0.35 --no-loo -o $(OUT)/held-relative.json --format csv > $@

# 7. Table 10's D_crit column against width (the only D_crit values the paper prints
#    per width; Figure 3's τ data are not given as numbers)
$(OUT)/tau.csv: $(PAPER)/table10-dcrit.csv $(OUT)/.dir
	$(FIT) --tau $< --loss ls --space loss -o $(OUT)/tau.json --format csv > $@

# Side by side: claims.tsv names, for each claim, the fit, model and quantity to compare;
# a claim matches when the paper's value lies inside our 95% bootstrap CI (parameters,
# derived values) or within the stated tolerance (metrics).
$(OUT)/comparison.txt: $(PAPER)/claims.tsv $(PAPER)/compare.awk $(csvs)
	awk -v out=$(OUT) -f $(PAPER)/compare.awk $(PAPER)/claims.tsv > $@
