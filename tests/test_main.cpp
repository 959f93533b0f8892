// Catch2 v2 builds its main() here; with v3 it comes from Catch2::Catch2WithMain.
#if SHAPELAW_CATCH2_MAJOR < 3
#define CATCH_CONFIG_RUNNER
#endif
#include "catch.h"

#if SHAPELAW_CATCH2_MAJOR < 3
// Each CTest entry runs one binary filtered to one case. Catch2 v3 fails a run whose
// filter matches no case; v2 reports "No test cases matched" and exits 0, so a CTest entry
// whose filter went wrong (a ';' in a case name split it into two on Debian 12's CMake) passed
// without running anything. v2's own `--warn NoTests` is that rule (exit 2): on always.
int main(int argc, char* argv[]) {
  Catch::Session session;
  if (const int bad_arguments = session.applyCommandLine(argc, argv)) return bad_arguments;
  auto& config = session.configData();
  config.warnings = static_cast<Catch::WarnAbout::What>(config.warnings | Catch::WarnAbout::NoTests);
  return session.run();
}
#endif
