// The twin of test_catch_owns_check.cpp in the other include order: LibTorch first.
#include <torch/torch.h>

#include "catch.h"
#include "catch_owns_check.h"

SHAPELAW_CATCH_OWNS_CHECK_CASES("torch then Catch", "torch-first")
