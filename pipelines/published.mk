# make published: the paper's question put to every depth x width sweep we can read, one way.
# No training, no LibTorch: fit-law sweep on each study, then fit-law overview.
#   published studies   examples/published/*/ (Gemstones: W 256-3072, checkpoints to 350B tokens)
#   the paper's own 30  examples/paper/paper30.csv (its Tables 9-10, as it fitted them)
#   our own studies     the summary.json files under DATA, where `make`, `make controls` and
#                       `make chinchilla` have run (each is skipped, and said so, where it has not)
# Writes PUBLISHED_REPORT/<study>/{sweep.json,README.md,fit.json,plots} and PUBLISHED_REPORT/README.md.
#   make published                       (2 min 39 s on 2 cores once fit-law is built, docs/benchmarks.md)
#   make published SWEEP_ARGS="-B 1000"  more bootstrap draws
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:
include pipelines/tools.mk
$(call require_tools,fit-law)

DATA ?= data
PUBLISHED_REPORT ?= report-published
SWEEP_ARGS ?=
gemstones := examples/published/gemstones

# study id | inputs | fit-law sweep arguments | name
study_gemstones-hot := $(gemstones)/hot.csv
args_gemstones-hot := --name "Gemstones, constant lr (McLeish et al. 2025)"
study_gemstones-cooldown := $(gemstones)/cool_end.csv
args_gemstones-cooldown := --name "Gemstones, cooldown (McLeish et al. 2025)"
study_gemstones-half-lr := $(gemstones)/lr_ablation.csv
args_gemstones-half-lr := --name "Gemstones, half lr (McLeish et al. 2025)"
study_paper30 := examples/paper/paper30.csv
args_paper30 := --name "The paper's 30 configurations (its Tables 9-10)"
study_micro-sp := $(DATA)/micro/study/runs
args_micro-sp := --name "shapelaw micro study: SP, fixed lr, 1.18M tokens"
study_controls-sp-tuned := $(DATA)/micro/controls/sp/runs
args_controls-sp-tuned := --best-of lr --name "shapelaw controls: SP at its best lr"
study_controls-completep := $(DATA)/micro/controls/completep/runs
args_controls-completep := --best-of lr --name "shapelaw controls: CompleteP at its best lr"
study_chinchilla-sp := $(DATA)/pd-prose/micro/chinchilla/sp/runs
args_chinchilla-sp := --name "shapelaw chinchilla: SP, 20 tokens per parameter"
study_chinchilla-completep := $(DATA)/pd-prose/micro/chinchilla/completep/runs
args_chinchilla-completep := --name "shapelaw chinchilla: CompleteP, 20 tokens per parameter"

all_studies := gemstones-hot gemstones-cooldown gemstones-half-lr paper30 micro-sp controls-sp-tuned \
  controls-completep chinchilla-sp chinchilla-completep
# a study whose inputs are not here (our runs before `make`) is left out, and said so
present := $(foreach s,$(all_studies),$(if $(wildcard $(study_$(s))),$(s)))
absent := $(filter-out $(present),$(all_studies))
study_files = $(if $(filter %.csv,$(study_$(1))),$(study_$(1)),$(shell find $(study_$(1)) -name summary.json 2>/dev/null | sort))

.PHONY: all
all: $(PUBLISHED_REPORT)/README.md

define sweep_rule
$(PUBLISHED_REPORT)/$(1)/sweep.json: $(call study_files,$(1)) pipelines/published.mk | $(shapelaw_bin)/fit-law
	fit-law sweep $(study_$(1)) $(args_$(1)) $(SWEEP_ARGS) -o $(PUBLISHED_REPORT)/$(1)
endef
$(foreach s,$(present),$(eval $(call sweep_rule,$(s))))

$(PUBLISHED_REPORT)/README.md: $(foreach s,$(present),$(PUBLISHED_REPORT)/$(s)/sweep.json)
	{ echo "# Does depth hurt? The paper's claim against every sweep"; echo; \
	  echo "The paper (\"The Depth Delusion\") says that past D_crit(W) = 2.43 ln W adding layers raises the loss."; \
	  echo "Each row is one study through the same \`fit-law sweep\`: the law-free depth test at matched tokens,"; \
	  echo "every law compared leaving one run out (runs, not checkpoints, are the resampling unit), and the"; \
	  echo "verdict by the rule in docs/formats.md (sweep.json). Made by \`make published\`."; echo; \
	  fit-law overview $^ --link-from $(PUBLISHED_REPORT); \
	  $(if $(absent),echo; echo "Not here (their runs have not been made): $(absent)";) } > $@.tmp
	mv $@.tmp $@
	@cat $@
