// tests/catch.h's promise, proved in the order that used to break it: Catch first, then
// LibTorch (whose glog CHECK aborted the binary). Two hidden cases plant a failure and a
// case after it; the visible case runs them in a child of this binary and reads Catch's
// verdict (catch_owns_check.h). The twin file includes them the other way round.
#include "catch.h"

#include <torch/torch.h>

#include "catch_owns_check.h"

SHAPELAW_CATCH_OWNS_CHECK_CASES("Catch then torch", "catch-first")
