# The tools the pipelines call, found in the build tree whatever make was started from
# (the top-level Makefile, or `make -f pipelines/X.mk` by hand), and a check at parse
# time that names what is missing instead of failing hours later with "command not found".
#   $(call require_tools,train fit-law)   stop now unless every tool is on PATH
# A dry run (make -n) only prints the plan, so it needs no build.
ifndef shapelaw_tools_included
shapelaw_tools_included := 1
BUILD ?= build
shapelaw_bin := $(abspath $(BUILD))/bin
export PATH := $(shapelaw_bin):$(PATH)
# make 4.3 does not pass exported variables to $(shell): give it the PATH explicitly, exported,
# so that every command of the line sees it (paper.mk's plan runs study-grid in a <(...))
with_path := export PATH='$(PATH)';
# `make -n`: the one definition every pipeline uses (stamps.mk includes this file)
dry_run := $(findstring n,$(firstword -$(MAKEFLAGS)))
missing_tools = $(strip $(foreach t,$(1),$(if $(shell $(with_path) command -v $(t)),,$(t))))
require_tools = $(if $(dry_run),,$(if $(call missing_tools,$(1)),$(error \
  $(call missing_tools,$(1)): not found in $(shapelaw_bin) nor on PATH; build the tools first: `make build` \
  (or cmake -S . -B $(BUILD) && cmake --build $(BUILD)), or set BUILD=DIR to another build tree)))
endif
