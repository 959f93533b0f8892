// tests/catch.h's promise, proved in the order that used to break it: Catch first, then
// LibTorch (whose glog CHECK aborted the binary). Two hidden cases plant a failure and a
// case after it; the visible case runs them in a child of this binary and reads Catch's
// verdict. The twin file includes them the other way round.
#include "catch.h"

#include <torch/torch.h>

#include "catch_owns_check.h"

TEST_CASE("planted: a failing CHECK on a tensor, Catch then torch", "[.planted-catch-first]") {
  auto ones = torch::ones({2});
  CHECK(ones.sum().item<float>() == 3.0f);
}

TEST_CASE("planted: the case after it, Catch then torch", "[.planted-catch-first]") { CHECK(true); }

TEST_CASE("a failing CHECK after Catch then torch is Catch's: counted, its expression shown, and the next case runs") {
  shapelaw::test::require_catch_owns_check("[planted-catch-first]", "ones.sum().item<float>() == 3.0f");
}
