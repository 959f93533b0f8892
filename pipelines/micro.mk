# The embedded micro-study (run by a bare `make`): Brown corpus -> tokenize -> shard
# -> verify. Later stages (train grid, probe-grads, fit-law, audit, report) hang off
# the `data` target. Tools come from build/bin (the top-level Makefile puts it on PATH).
SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DELETE_ON_ERROR:

DATA ?= data
VOCAB ?= 4096
VALIDATION_FRACTION ?= 0.02
SEED ?= 42

corpus_dir := $(DATA)/corpus/brown
corpus := $(corpus_dir)/.complete
tokenizer := $(DATA)/micro/tokenizer.model
shards_dir := $(DATA)/micro/shards
manifest := $(shards_dir)/manifest.json
verified := $(shards_dir)/.verified

.PHONY: all data
all: data
data: $(verified)

$(corpus):
	scripts/fetch-corpus $(corpus_dir)

# The tokenizer learns from the training documents only.
$(tokenizer): $(corpus)
	@mkdir -p $(@D)
	tokenize train-model $(corpus_dir)/train --vocab-size $(VOCAB) --seed $(SEED) -q -o $@

# encode | shard: a failing encoder leaves a truncated stream, which shard refuses.
$(manifest): $(tokenizer)
	tokenize encode -q -m $< $(corpus_dir)/train $(corpus_dir)/validation \
	  | shard write -q --tokenizer $< --seed $(SEED) --validation-fraction $(VALIDATION_FRACTION) -o $(@D)

$(verified): $(manifest)
	shard verify -q $(@D)
	shard inspect $(@D)
	@touch $@
