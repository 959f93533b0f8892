# Option stamps, shared by the pipelines. $(call sync_stamp,FILE,CONTENT[,RUN]) brings
# FILE up to date while make reads the makefile: it is rewritten only when its
# content differs, so its mtime marks real changes and targets depending on it rerun
# exactly when their options change. With RUN, a changed stamp first wipes the other
# files of its directory (a run retrained from scratch). A dry run (`make -n`) changes
# nothing: a stamp that would change is marked out of date instead, so `make -n`
# shows exactly what would rerun.
ifndef shapelaw_stamps_included
shapelaw_stamps_included := 1
include pipelines/tools.mk
define sync_stamp
$(if $(dry_run),$(if $(shell [ "$$(cat $(1) 2>/dev/null)" != '$(strip $(2))' ] && echo changed),$(eval $(1): FORCE)),\
$(shell mkdir -p $(dir $(1)); \
  if [ "$$(cat $(1) 2>/dev/null)" != '$(strip $(2))' ]; then \
    if [ -f $(1) ] && [ -n '$(3)' ]; then echo "study: $(3) changed: retraining it from scratch" >&2; \
      find $(dir $(1)) -mindepth 1 -not -name $(notdir $(1)) -delete; fi; \
    printf '%s\n' '$(strip $(2))' > $(1); \
  fi))
endef
# Only a dry run gets here (a stamp that would change), or a deleted stamp.
%.args:
	@mkdir -p $(@D); touch $@
.PHONY: FORCE
FORCE:
endif
