// scripts/gpu-slot, the GPU slots of `make -j` on one node, on CPU with fake GPU indexes:
// every holder marks the indexes it was given (mkdir fails if another holds one).
#include "catch.h"

#include <fstream>
#include <sstream>

#include "test_support.h"

using namespace shapelaw;
using test::run;

namespace {

// A command for gpu-slot: claims each index of CUDA_VISIBLE_DEVICES for `seconds`.
std::string holder(const std::string& dir, const std::string& seconds) {
  return "bash -c 'for i in ${CUDA_VISIBLE_DEVICES//,/ }; do mkdir " + dir + "/held-$i 2>/dev/null || echo VIOLATION $i >> " +
         dir + "/violations; done; echo $CUDA_VISIBLE_DEVICES >> " + dir + "/got; sleep " + seconds +
         "; for i in ${CUDA_VISIBLE_DEVICES//,/ }; do rmdir " + dir + "/held-$i; done'";
}

std::string slot(const std::string& dir, int gpus, int need) {
  return test::source("scripts/gpu-slot") + " -q --gpus " + std::to_string(gpus) + " --need " + std::to_string(need) +
         " --lock-dir " + dir + "/locks -- ";
}

}  // namespace

TEST_CASE("gpu-slot: concurrent runs never share a GPU index, a multi-GPU run takes several") {
  test::TempDir dir;
  const std::string d = dir.path();
  std::string script = "cd " + d + " && (";
  for (int i = 0; i < 6; ++i) script += slot(d, 3, 1) + holder(d, "0.3") + " & ";
  script += slot(d, 3, 2) + holder(d, "0.3") + " & ";
  script += slot(d, 3, 3) + holder(d, "0.2") + " & ";
  for (int i = 0; i < 4; ++i) script += slot(d, 3, 1) + holder(d, "0.2") + " & ";
  script += "wait)";
  auto r = run(script);
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(std::ifstream(d + "/violations").good());
  std::istringstream got(test::read_text(d + "/got"));
  std::string line;
  int singles = 0, pairs = 0, triples = 0;
  while (std::getline(got, line)) {
    if (line == "0" || line == "1" || line == "2") ++singles;
    if (line == "0,1" || line == "0,2" || line == "1,2") ++pairs;
    if (line == "0,1,2") ++triples;
  }
  CHECK(singles == 10);
  CHECK(pairs == 1);
  CHECK(triples == 1);
}

TEST_CASE("gpu-slot: a killed holder releases its GPU, bad arguments are refused") {
  test::TempDir dir;
  const std::string d = dir.path();
  // the holder is exec'd: killing it (SIGKILL, no cleanup) frees the index for the next run
  // (killed once it holds the lock, which it says by a file, not after a fixed sleep)
  auto r = run("cd " + d + " && (" + slot(d, 1, 1) +
               "bash -c 'touch held; exec sleep 30' & pid=$!; for i in $(seq 600); do [ -f held ] && break; sleep 0.05; "
               "done; [ -f held ] || echo 'the holder never ran'; kill -9 $pid; wait $pid 2>/dev/null; " + slot(d, 1, 1) +
               "bash -c 'echo got $CUDA_VISIBLE_DEVICES')");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("got 0"));
  CHECK(r.output.find("never ran") == std::string::npos);
  r = run(slot(d, 2, 3) + "true");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--need 3 is more than the 2 GPU(s)"));
  r = run(test::source("scripts/gpu-slot") + " --need 1 -- true");
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains("--gpus N"));
}
