#include "catch.h"

#include <filesystem>

#include "test_support.h"
#include "util/atomic_file.h"
#include "util/cpu_runtime.h"
#include "util/error.h"
#include "util/sha256.h"

using namespace shapelaw;

TEST_CASE("sha256 matches the FIPS 180-2 test vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  std::string million(1000000, 'a');
  CHECK(sha256_hex(million) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("an uncommitted atomic file leaves nothing under the final name") {
  test::TempDir dir;
  std::string path = dir.path() + "/out.bin";
  {
    AtomicFile out(path);
    out.write("partial");
  }
  CHECK_FALSE(std::filesystem::exists(path));
  CHECK(std::filesystem::is_empty(dir.path()));
  write_file_atomic(path, "whole");
  CHECK(read_file(path) == "whole");
}

TEST_CASE("writing into a missing directory names the path") {
  test::TempDir dir;
  std::string path = dir.path() + "/no/such/dir/out.bin";
  REQUIRE_THROWS_AS(AtomicFile(path), Error);
  REQUIRE_THROWS_WITH(AtomicFile(path), Catch::Contains(path));
}

TEST_CASE("an atomic file aimed at a device writes in place and leaves the device alone") {
  {
    AtomicFile out("/dev/null");
    out.write("discarded");
    out.commit();
  }
  CHECK(std::filesystem::is_character_file("/dev/null"));
}

TEST_CASE("cpu runtime: BLAS description and the OpenBLAS core type for this CPU") {
  const std::string description = shapelaw::blas_description();
  CHECK_FALSE(description.empty());
  // this test binary links no BLAS: the OpenBLAS functions must find nothing and do nothing
  CHECK(shapelaw::blas_core_name().empty());
  CHECK(description == "unknown (not OpenBLAS)");
  shapelaw::set_blas_threads(1);  // a no-op, not a crash
#if defined(__x86_64__)
  const std::string best = shapelaw::best_openblas_coretype();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) CHECK(best == "SkylakeX");
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) CHECK(best == "Haswell");
#endif
}
