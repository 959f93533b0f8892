#pragma once
// The tests are written against Catch2 v2 (Debian 12's catch2). Debian 13 ships Catch2 v3,
// which renamed the few v2 names the tests use; this maps them, so the suite builds on both.
// SHAPELAW_CATCH2_MAJOR comes from tests/CMakeLists.txt (the version CMake found).
#if SHAPELAW_CATCH2_MAJOR >= 3
#include <catch2/catch_all.hpp>
#include <string>

namespace Catch {
inline Matchers::StringContainsMatcher Contains(const std::string& text) { return Matchers::ContainsSubstring(text); }
using Matchers::StartsWith;
}  // namespace Catch
using Catch::Approx;
#else
#include <catch2/catch.hpp>
#endif
