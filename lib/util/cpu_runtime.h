#pragma once
// The BLAS under Debian's LibTorch is whatever libblas.so.3 points to (OpenBLAS with
// libopenblas0-pthread). Three process settings decide CPU step time and are invisible
// from LibTorch:
//  - OpenBLAS 0.3.21 (Debian 12) does not know CPUs released after it (e.g. Xeon
//    Sapphire/Emerald Rapids) and falls back to its generic "Prescott" SSE3 kernels,
//    ~5x slower than its AVX-512 ones. It reads OPENBLAS_CORETYPE only while loading,
//    so the only fix from inside a program is to set it and re-execute.
//  - OpenBLAS keeps its own thread pool; torch::set_num_threads does not size it, and
//    libgomp's spin-waiting ATen threads starve it unless OMP_WAIT_POLICY=PASSIVE, which
//    libgomp, too, reads only while loading.
//  - glibc serves every allocation above 32 MiB with a fresh mmap and unmaps it on free,
//    so each training step page-faults and zeroes its large activations (the logits)
//    again: a quarter of a small CPU step went to the kernel's page-fault path.
// And the fixed kernel set (kernels/kernel_set.h) pins both libraries that choose their
// kernels by CPU, each read once while loading: OPENBLAS_CORETYPE=Haswell (Debian's
// OpenBLAS is DYNAMIC_ARCH) and ATEN_CPU_CAPABILITY=avx2, on every CPU with AVX2+FMA.
// The BLAS functions are no-ops when the BLAS is not OpenBLAS (MKL in pip torch).
#include <string>
#include <utility>
#include <vector>

namespace shapelaw {

// Everything a LibTorch tool does first in main(): re-executes with corrected OpenBLAS and
// OpenMP settings if needed (with fixed_libraries, the fixed set's library settings
// whatever the environment said), then keeps freed memory for reuse.
void tune_cpu_runtime(const char* tool_name, char** argv, bool fixed_libraries = true);

// The environment of the fixed kernel set's libraries on this CPU (empty without AVX2+FMA,
// which cannot run it): {{"OPENBLAS_CORETYPE", "Haswell"}, {"ATEN_CPU_CAPABILITY", "avx2"}}.
std::vector<std::pair<std::string, std::string>> fixed_library_environment();

// Large blocks come from the heap and stay there after free (no mmap/munmap churn):
// a step's tensors reuse the previous step's pages. RSS stays at its peak (a trainer's
// steps reach the same peak again anyway). Threads other than the main one still mmap
// blocks above 64 MiB.
void keep_freed_memory_for_reuse();

// OpenBLAS's name for the kernels in use ("SkylakeX", "Prescott", ...); "" if not OpenBLAS.
std::string blas_core_name();

// The OpenBLAS core type this CPU supports best ("SkylakeX", "Haswell"), "" if unknown.
std::string best_openblas_coretype();

// If OpenBLAS picked kernels weaker than this CPU supports (and OPENBLAS_CORETYPE is
// unset; native only), or runs its own pthreads beside OpenMP (and OMP_WAIT_POLICY is
// unset), or (fixed_libraries) a fixed-set variable is not the fixed value, sets those
// variables and re-executes the program (argv unchanged); silent unless exec fails.
// Returns only when no re-execution is needed or it failed.
void reexec_with_cpu_environment(const char* tool_name, char** argv, bool fixed_libraries = true);

// Sizes OpenBLAS's thread pool (ATen's intra-op threads are set separately).
void set_blas_threads(int threads);

// "OpenBLAS SkylakeX (detected as Prescott, corrected), 2 threads; OMP_WAIT_POLICY=PASSIVE"
// or "unknown (not OpenBLAS)": for --version, logs and summary.json.
std::string blas_description();

}  // namespace shapelaw
