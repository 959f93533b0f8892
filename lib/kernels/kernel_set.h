#pragma once
// The instruction set of every hand-written CPU kernel (kernels/block_kernels.h,
// kernels/softmax_rows.h, kernels/adamw.h), chosen once per process, and the two kernel
// sets a run can ask for:
//   fixed   the AVX2+FMA bodies on every x86-64 CPU that has them (never AVX-512), so a
//           run gives the same bits on any such machine; with OpenBLAS pinned to its
//           Haswell kernels and ATen to its avx2 ones (util/cpu_runtime.h), the default
//   native  the best body this CPU runs (AVX-512 where it has it), and the libraries'
//           own choices: faster on some machines, the same numbers only on the same kind
// Which kernels are used (which shapes take a kernel at all) never depends on the set:
// every eligibility rule is a constant of the kernel layer, the same for every body.
// Torch-free.
#include <string>
#include <vector>

namespace shapelaw {

enum class Isa { portable, avx2, avx512 };
enum class KernelSet { fixed, native };

const char* isa_name(Isa isa);        // "portable", "avx2", "avx512"
bool isa_runs_here(Isa isa);          // this CPU executes the body (avx2: AVX2 and FMA)
std::vector<Isa> isas_runnable_here();  // best first; always ends with portable
Isa best_isa_here();

KernelSet parse_kernel_set(const std::string& name);  // "fixed" | "native", else throws Error
const char* kernel_set_name(KernelSet set);

// The body a set runs on this CPU: fixed -> avx2 (portable on a CPU without AVX2+FMA,
// which cannot run the fixed set); native -> the best this CPU runs, capped by
// SHAPELAW_CPU_CAPABILITY=avx2|portable when set (as ATEN_CPU_CAPABILITY caps ATen's).
Isa isa_for(KernelSet set);

// The process's choice, made by the tool before any kernel runs (train: --kernels);
// a process that never chooses runs the fixed set.
void choose_kernel_set(KernelSet set);
KernelSet kernel_set();
Isa kernel_isa();

// For tests: run the given body from now on (not thread-safe; isa must run here).
void use_isa_for_testing(Isa isa);

}  // namespace shapelaw
