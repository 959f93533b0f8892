#pragma once
// Which kernels a process's CPU arithmetic runs: the set asked for (kernels/kernel_set.h),
// the body of the hand-written kernels, OpenBLAS's core and ATen's capability. In
// summary.json ("kernels"), the start-up log and `train --version`, so that runs of the
// fixed and the native set are never mistaken for one another.
#include <string>

#include <nlohmann/json.hpp>

namespace shapelaw {

struct KernelRecord {
  std::string set;              // "fixed" | "native"
  std::string isa;              // the hand-written kernels' body: "avx2", "avx512", "portable"
  std::string blas_core;        // OpenBLAS's core ("Haswell"), "" if the BLAS is not OpenBLAS
  std::string aten_capability;  // "avx2", "avx512", "default"; "" if unknown
};

KernelRecord current_kernel_record();
nlohmann::json to_json(const KernelRecord& r);
// "fixed: avx2 kernels, OpenBLAS Haswell, ATen avx2"
std::string describe(const KernelRecord& r);
// Where a fixed-set record differs from the fixed set ("OpenBLAS SkylakeX, not Haswell";
// e.g. a process that was not re-executed, or a CPU without AVX2+FMA); "" when it does not.
std::string fixed_set_deviation(const KernelRecord& r);

}  // namespace shapelaw
