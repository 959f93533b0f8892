#include "util/cpu_runtime.h"

#include <dlfcn.h>
#include <malloc.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

namespace shapelaw {
namespace {

// Looked up at run time: the program links no BLAS itself, LibTorch brings it in.
template <class Fn>
Fn openblas_symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

// Tells the re-executed process what OpenBLAS had picked, for blas_description().
constexpr const char* kDetectedCoreVar = "SHAPELAW_OPENBLAS_DETECTED_CORE";

// How capable a set of OpenBLAS x86-64 kernels is: only the order matters.
int coretype_rank(const std::string& name) {
  static const char* const kAvx512[] = {"SkylakeX", "Cooperlake", "SapphireRapids"};
  static const char* const kAvx2[] = {"Haswell", "Zen"};
  for (const char* n : kAvx512)
    if (strcasecmp(name.c_str(), n) == 0) return 3;
  for (const char* n : kAvx2)
    if (strcasecmp(name.c_str(), n) == 0) return 2;
  if (strcasecmp(name.c_str(), "Sandybridge") == 0) return 1;
  return 0;  // Prescott, Core2, Nehalem, Atom, ...: SSE kernels
}

}  // namespace

std::string blas_core_name() {
  auto corename = openblas_symbol<char* (*)()>("openblas_get_corename");
  return corename ? std::string(corename()) : std::string();
}

std::string best_openblas_coretype() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
  return "";
}

std::vector<std::pair<std::string, std::string>> fixed_library_environment() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return {{"OPENBLAS_CORETYPE", "Haswell"}, {"ATEN_CPU_CAPABILITY", "avx2"}};
#endif
  return {};
}

std::vector<std::pair<std::string, std::string>> environment_corrections(bool fixed_libraries) {
  std::vector<std::pair<std::string, std::string>> set;
  const std::string current = blas_core_name(), best = best_openblas_coretype();
  const auto fixed = fixed_libraries ? fixed_library_environment() : decltype(fixed_library_environment()){};
  for (const auto& [name, value] : fixed) {
    const char* now = std::getenv(name.c_str());
    if (!now || value != now) set.emplace_back(name, value);
  }
  if (fixed.empty() && !std::getenv("OPENBLAS_CORETYPE") && !current.empty() && !best.empty() &&
      coretype_rank(current) < coretype_rank(best)) {
    set.emplace_back("OPENBLAS_CORETYPE", best);
    set.emplace_back(kDetectedCoreVar, current);
  }
  // OpenBLAS with its own pthreads beside ATen's OpenMP: libgomp's default spin-wait
  // after each parallel region takes the cores OpenBLAS's threads need next (2 threads
  // ran a small step 1.9x slower than with passive waiting).
  auto parallel = openblas_symbol<int (*)()>("openblas_get_parallel");
  if (!std::getenv("OMP_WAIT_POLICY") && parallel && parallel() == 1) set.emplace_back("OMP_WAIT_POLICY", "PASSIVE");
  return set;
}

// Whether /proc/self/exe is this program, natively: not ld.so running it, and not under
// valgrind (which answers readlink with the client's path but would exec its own tool).
bool self_is_argv0(const char* argv0) {
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload && std::strstr(preload, "vgpreload")) return false;
  char buffer[4096];
  const ssize_t n = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  if (n <= 0 || !argv0) return false;
  buffer[n] = '\0';
  auto base = [](const char* path) {
    const char* slash = std::strrchr(path, '/');
    return std::string(slash ? slash + 1 : path);
  };
  return base(buffer) == base(argv0);
}

void reexec_with_cpu_environment(const char* tool_name, char** argv, bool fixed_libraries) {
  const auto corrections = environment_corrections(fixed_libraries);
  if (corrections.empty()) return;  // nothing to correct, the user chose, or we already re-executed
  if (!self_is_argv0(argv[0])) return;  // under valgrind or ld.so: leave the settings alone
  // Silent: tools keep stderr for progress and errors; blas_description() (in --version,
  // the start-up log and summary.json) tells what was detected and what runs.
  for (const auto& [name, value] : corrections) setenv(name.c_str(), value.c_str(), 1);
  execv("/proc/self/exe", argv);
  std::fprintf(stderr, "%s: warning: could not re-execute with corrected OpenBLAS/OpenMP settings (%s)\n", tool_name,
               std::strerror(errno));
  for (const auto& [name, value] : corrections) unsetenv(name.c_str());
}

void set_blas_threads(int threads) {
  if (auto set = openblas_symbol<void (*)(int)>("openblas_set_num_threads")) set(threads);
}

void keep_freed_memory_for_reuse() {
  mallopt(M_MMAP_MAX, 0);                    // no per-allocation mmap: large blocks from the heap
  mallopt(M_TRIM_THRESHOLD, 1 << 30);        // and never hand the heap top back between steps
}

void tune_cpu_runtime(const char* tool_name, char** argv, bool fixed_libraries) {
  reexec_with_cpu_environment(tool_name, argv, fixed_libraries);
  keep_freed_memory_for_reuse();
}

std::string blas_description() {
  const std::string core = blas_core_name();
  if (core.empty()) return "unknown (not OpenBLAS)";
  auto get = openblas_symbol<int (*)()>("openblas_get_num_threads");
  const int threads = get ? get() : 0;
  const char* detected = std::getenv(kDetectedCoreVar);
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  std::string correction;
  if (detected)
    correction = core == detected ? std::string(" (this OpenBLAS ignored OPENBLAS_CORETYPE)")
                                  : std::string(" (detected as ") + detected + ", corrected)";
  return "OpenBLAS " + core + correction +
         ", " + std::to_string(threads) + (threads == 1 ? " thread" : " threads") +
         (wait_policy ? std::string("; OMP_WAIT_POLICY=") + wait_policy : std::string());
}

}  // namespace shapelaw
