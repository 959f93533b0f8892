#pragma once
// Every test includes this header for Catch2, and every assertion in the suite must be
// Catch's. Two things are settled here, once:
//
// 1. LibTorch brings in glog (or c10's stand-in for it), whose one-argument CHECK
//    aborts the process. Whichever is included last defines CHECK, so a test that
//    included Catch before <torch/torch.h> got glog's: its cases reported no assertions
//    and a failing CHECK killed the binary. In the test executables that link LibTorch
//    (SHAPELAW_TEST_WITH_TORCH, set by tests/CMakeLists.txt), c10's logging header is
//    included first and its CHECK removed, and Catch then defines its own; both headers
//    are include-guarded, so no later torch include can take it back. (Not in the
//    others: Debian installs c10 under /usr/include, and glog's operator<< for standard
//    containers would capture Catch's printing of them.)
//    tests/model/test_catch_owns_check*.cpp plant a failure in each include order.
// 2. The tests are written against Catch2 v2 (Debian 12's catch2). Debian 13 ships
//    Catch2 v3, which renamed the few v2 names the tests use; they are mapped below.
//    SHAPELAW_CATCH2_MAJOR comes from tests/CMakeLists.txt (the version CMake found).
#ifdef SHAPELAW_TEST_WITH_TORCH
#include <c10/util/Logging.h>
#undef CHECK
#endif

#if SHAPELAW_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>
#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text) { return Matchers::ContainsSubstring(text); }
using Matchers::EndsWith;
using Matchers::StartsWith;
}  // namespace Catch
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif

