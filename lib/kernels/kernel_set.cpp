#include "kernels/kernel_set.h"

#include <atomic>
#include <cstdlib>

#include "util/error.h"

namespace shapelaw {
namespace {

std::atomic<int> chosen_set{int(KernelSet::fixed)};
std::atomic<int> chosen_isa{-1};  // -1: not chosen yet, isa_for(fixed) on first use

Isa cap_from_environment(Isa best) {
  const char* cap = std::getenv("SHAPELAW_CPU_CAPABILITY");
  if (!cap || !*cap) return best;
  const std::string c = cap;
  for (Isa isa : {Isa::portable, Isa::avx2, Isa::avx512})
    if (c == isa_name(isa)) return int(isa) < int(best) ? isa : best;
  throw Error("SHAPELAW_CPU_CAPABILITY='" + c + "': expected portable, avx2 or avx512");
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx512: return "avx512";
    case Isa::avx2: return "avx2";
    case Isa::portable: break;
  }
  return "portable";
}

bool isa_runs_here(Isa isa) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::avx512: return __builtin_cpu_supports("avx512f");
    case Isa::avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::portable: return true;
  }
#endif
  return isa == Isa::portable;
}

std::vector<Isa> isas_runnable_here() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::avx512, Isa::avx2, Isa::portable})
    if (isa_runs_here(isa)) isas.push_back(isa);
  return isas;
}

Isa best_isa_here() { return isas_runnable_here().front(); }

KernelSet parse_kernel_set(const std::string& name) {
  if (name == "fixed") return KernelSet::fixed;
  if (name == "native") return KernelSet::native;
  throw Error("--kernels '" + name + "': expected fixed or native");
}

const char* kernel_set_name(KernelSet set) { return set == KernelSet::native ? "native" : "fixed"; }

Isa isa_for(KernelSet set) {
  if (set == KernelSet::native) return cap_from_environment(best_isa_here());
  return isa_runs_here(Isa::avx2) ? Isa::avx2 : Isa::portable;
}

void choose_kernel_set(KernelSet set) {
  const Isa isa = isa_for(set);
  chosen_set = int(set);
  chosen_isa = int(isa);
}

KernelSet kernel_set() { return KernelSet(chosen_set.load()); }

Isa kernel_isa() {
  int isa = chosen_isa.load(std::memory_order_relaxed);
  if (isa < 0) {
    isa = int(isa_for(KernelSet::fixed));
    chosen_isa = isa;
  }
  return Isa(isa);
}

void use_isa_for_testing(Isa isa) {
  if (!isa_runs_here(isa)) throw Error(std::string("use_isa_for_testing: this CPU cannot run ") + isa_name(isa));
  chosen_isa = int(isa);
}

}  // namespace shapelaw
