#include "train/kernel_record.h"

#include "compat/torch_compat.h"
#include "kernels/kernel_set.h"
#include "util/cpu_runtime.h"

namespace shapelaw {

KernelRecord current_kernel_record() {
  return {kernel_set_name(kernel_set()), isa_name(kernel_isa()), blas_core_name(), compat::aten_cpu_capability()};
}

nlohmann::json to_json(const KernelRecord& r) {
  return {{"set", r.set}, {"isa", r.isa}, {"blas_core", r.blas_core}, {"aten_capability", r.aten_capability}};
}

std::string describe(const KernelRecord& r) {
  return r.set + ": " + r.isa + " kernels, " + (r.blas_core.empty() ? "BLAS not OpenBLAS" : "OpenBLAS " + r.blas_core) +
         ", ATen " + (r.aten_capability.empty() ? "capability unknown" : r.aten_capability);
}

std::string fixed_set_deviation(const KernelRecord& r) {
  if (r.set != "fixed") return "";
  std::string out;
  auto differs = [&](const std::string& what, const std::string& got, const std::string& want) {
    if (got != want) out += (out.empty() ? "" : "; ") + what + " " + (got.empty() ? "unknown" : got) + ", not " + want;
  };
  differs("kernels", r.isa, "avx2");
  if (!r.blas_core.empty()) differs("OpenBLAS", r.blas_core, "Haswell");
  differs("ATen", r.aten_capability, "avx2");
  return out;
}

}  // namespace shapelaw
