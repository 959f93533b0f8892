// Catch2 v2 builds its main() here; with v3 it comes from Catch2::Catch2WithMain.
#if SHAPELAW_CATCH2_MAJOR < 3
#define CATCH_CONFIG_MAIN
#endif
#include "catch.h"
