# How a study's grid becomes its runs: the options of scripts/study-grid that SEEDS, LRS,
# SWEEP and LENIENT stand for. Shared by study.mk (which plans the runs from them) and
# paper.mk (whose GPU layouts, planned at parse time before study.mk is read, are those
# of the same expanded runs).
ifndef shapelaw_grid_included
shapelaw_grid_included := 1
comma := ,
empty :=
space := $(empty) $(empty)
grid_expand_opts = $(if $(strip $(SEEDS)),--seeds '$(strip $(SEEDS))') \
  $(if $(strip $(LRS)),--sweep lr=$(subst $(space),$(comma),$(strip $(LRS)))) $(foreach s,$(SWEEP),--sweep $(s))
endif
