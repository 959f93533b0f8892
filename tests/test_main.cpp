// Catch2 v2 builds its main() here; with v3 it comes from Catch2::Catch2WithMain.
#if SHAPELAW_CATCH2_MAJOR < 3
#define CATCH_CONFIG_RUNNER
#endif
#include "catch.h"

#if SHAPELAW_CATCH2_MAJOR < 3
#include <iostream>

// Each CTest entry runs one binary filtered to one case. Catch2 v3 fails a run whose
// filters match no case; v2 reports "No tests ran" and exits 0, so a CTest entry whose
// filter went wrong (a ';' in a case name split it into two, session 21) passed without
// running anything. Counting the cases that start gives v2 the same rule.
namespace {
int cases_started = 0;
struct CountCases : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    ++cases_started;
    TestEventListenerBase::testCaseStarting(info);
  }
};
}  // namespace
CATCH_REGISTER_LISTENER(CountCases)

int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int bad_arguments = session.applyCommandLine(argc, argv)) return bad_arguments;
  const int failed = session.run();
  const auto& config = session.configData();
  const bool listing = config.listTests || config.listTags || config.listReporters || config.listTestNamesOnly;
  if (failed == 0 && cases_started == 0 && !listing && !config.showHelp && !config.testsOrTags.empty()) {
    std::cerr << "no test case matches the filter: a test that runs nothing fails (as in Catch2 v3)\n";
    return 2;
  }
  return failed;
}
#endif
