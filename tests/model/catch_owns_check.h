#pragma once
// Runs this test binary's hidden planted cases under `tag` in a child process and
// requires Catch's report of them: one failed assertion showing `expression`, the case
// after it passed, and an ordinary exit (a glog CHECK would end the child by SIGABRT
// with neither).
#include <string>

#include "catch.h"
#include "test_support.h"

namespace shapelaw::test {

inline void require_catch_owns_check(const std::string& tag, const std::string& expression) {
  const auto result = run(this_test_binary() + " '" + tag + "' --reporter console 2>&1");
  INFO(result.output);
  // Catch's "a case failed": the number of failed cases in older Catch2, 42 in newer ones (Debian
  // sid's 3.7.1); a glog abort would be 134 (SIGABRT)
  CHECK((result.exit_code == 1 || result.exit_code == 42));
  CHECK_THAT(result.output, Catch::Contains(expression));
  CHECK_THAT(result.output, Catch::Contains("FAILED"));
  CHECK_THAT(result.output, Catch::Contains("test cases: 2 | 1 passed | 1 failed"));
  CHECK_THAT(result.output, !Catch::Contains("Check failed"));
}

}  // namespace shapelaw::test

// The three cases of one include order (ORDER a phrase, TAG a tag word); torch included.
#define SHAPELAW_CATCH_OWNS_CHECK_CASES(ORDER, TAG)                                                     \
  TEST_CASE("planted: a failing CHECK on a tensor, " ORDER, "[.planted-" TAG "]") {                     \
    auto ones = torch::ones({2});                                                                      \
    CHECK(ones.sum().item<float>() == 3.0f);                                                            \
  }                                                                                                     \
  TEST_CASE("planted: the case after it, " ORDER, "[.planted-" TAG "]") { CHECK(true); }                \
  TEST_CASE("a failing CHECK after " ORDER " is Catch's: counted, its expression shown, and the next case runs") { \
    shapelaw::test::require_catch_owns_check("[planted-" TAG "]", "ones.sum().item<float>() == 3.0f"); \
  }
