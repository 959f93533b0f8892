// The twin of test_catch_owns_check.cpp in the other include order: LibTorch first.
#include <torch/torch.h>

#include "catch.h"
#include "catch_owns_check.h"

TEST_CASE("planted: a failing CHECK on a tensor, torch then Catch", "[.planted-torch-first]") {
  auto ones = torch::ones({2});
  CHECK(ones.sum().item<float>() == 3.0f);
}

TEST_CASE("planted: the case after it, torch then Catch", "[.planted-torch-first]") { CHECK(true); }

TEST_CASE("a failing CHECK after torch then Catch is Catch's: counted, its expression shown, and the next case runs") {
  shapelaw::test::require_catch_owns_check("[planted-torch-first]", "ones.sum().item<float>() == 3.0f");
}
