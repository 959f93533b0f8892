// scripts/gpu-check.sh --rehearse: the GPU check's every step on the CPU (Gloo, fp32),
// with the tools of this build, on a learnable shard set; and the same rehearsal with a
// broken resume planted (the optimizer state dropped), which it must fail.
#include "catch.h"

#include <cmath>
#include <cstdio>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "learnable_shards.h"
#include "test_support.h"

using namespace shapelaw;
using test::run;

namespace {

const std::string& shards() {
  static test::TempDir dir;
  static std::string path = test::write_learnable_shards(dir.path() + "/shards");
  return path;
}

std::string rehearse(const std::string& env = "", const std::string& args = "") {
  // without OUT: ctest run by the device tool's gpu-check inherits it, and a rehearsal
  // would overwrite that call's gpu-check.log
  return "cd " + test::source("") + " && env -u OUT GPU_CHECK_DATA=" + shards() + " GPU_CHECK_BIN=" +
         test::bin("") + " " + env + " scripts/gpu-check.sh --rehearse " + args + " 2>&1";
}


// Each PASS line's value against its tolerance, read here rather than taken from the
// script's word: "max |dloss| V ... within T", "max relative difference V ... within T",
// "V within 1 +- T", "= R x the tolerance ... within >= K x". Returns the lines re-checked.
int recheck_verdicts(const std::string& output) {
  static const std::regex at_most(R"(PASS .*(?:max \|dloss\||max relative difference|\|eval - summary final_val_loss\|) )"
                                  R"(([0-9.e+-]+).* within ([0-9.e+-]+)$)");
  static const std::regex around_one(R"(PASS .*: ([0-9.e+-]+) within 1 \+- ([0-9.e+-]+)$)");
  static const std::regex at_least(R"(PASS .* = ([0-9.e+-]+) x the tolerance .* within >= ([0-9.e+-]+) x$)");
  std::istringstream lines(output);
  int rechecked = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    INFO(line);
    if (std::regex_search(line, m, at_least)) {
      CHECK(std::stod(m[1]) >= std::stod(m[2]));
    } else if (std::regex_search(line, m, around_one)) {
      CHECK(std::abs(std::stod(m[1]) - 1) <= std::stod(m[2]));
    } else if (std::regex_search(line, m, at_most)) {
      CHECK(std::stod(m[1]) <= std::stod(m[2]));
    } else {
      continue;
    }
    ++rechecked;
  }
  return rechecked;
}
}  // namespace

TEST_CASE("gpu-check --rehearse: every check passes on the CPU with its value and tolerance") {
  auto r = run(rehearse());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::printf("%s", r.output.c_str());
  CHECK(test::count_lines_starting(r.output, "gpu-check: FAIL") == 0);
  CHECK(test::count_lines_starting(r.output, "gpu-check: PASS") >= 18);
  CHECK(recheck_verdicts(r.output) >= 17);
  for (const char* check : {"PASS fp32 cpu vs cpu, head dim 16, steps 1-5: max |dloss|",
                            "PASS fp32 cpu vs cpu, head dim 48", "PASS fp32 cpu vs cpu, head dim 64",
                            "info fp32 cpu vs cpu, head dim 48, steps 1-10: max |dloss|", "(drift, no tolerance)",
                            "PASS resume after SIGKILL at 15 vs uninterrupted, steps 16-20: max |dloss| 0 within 0.001",
                            "PASS a resume without the optimizer state vs uninterrupted, steps 16-20",
                            "PASS ZeRO-2 resume after SIGKILL at 15 vs uninterrupted, steps 16-20",
                            "PASS a ZeRO-2 resume without its optimizer slice", "PASS gloo on one rank vs no process group",
                            "PASS a readout every step vs the default's (every 10 steps on a GPU), steps 1-20: max |dloss| 0 within",
                            "PASS probe steps: ZeRO-2's per-layer gradient norms vs plain",
                            "PASS probe-grads measure on cpu vs cpu", "PASS train eval on cpu vs summary.json",
                            "PASS memory tiny: plan peak / measured allocated peak", "info tiny  train",
                            "attention textbook", "info tiny  profile of steps 13-14 on cpu:",
                            "bf16 vs fp32: not rehearsed"})
    CHECK_THAT(r.output, Catch::Contains(check));
  CHECK_THAT(r.output, Catch::Contains("checks passed in"));
  // the order the header states: what no GPU has shown yet first, resume and parallel
  // (bit-identical on the H200) last, where a short deadline falls
  size_t at = 0;
  for (const char* section : {"throughput", "fp32", "bf16", "probe", "memory", "resume", "parallel"}) {
    INFO("section " << section << " after the one before it");
    const size_t next = r.output.find(std::string("]: section ") + section + "\n");
    CHECK(next != std::string::npos);
    CHECK(next >= at);
    if (next != std::string::npos) at = next;
  }
}

TEST_CASE("gpu-check --rehearse: a resume without the optimizer state is caught and the check exits non-zero") {
  // testing only: GPU_CHECK_PLANT breaks every resume of the rehearsal; --only resume runs
  // the main run and the resume section alone (plain and ZeRO-2), the checks it breaks
  auto r = run(rehearse("GPU_CHECK_PLANT=resume-without-optimizer", "--only resume"));
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.output, Catch::Contains("FAIL resume after SIGKILL at 15 vs uninterrupted, steps 16-20"));
  CHECK_THAT(r.output, Catch::Contains("FAIL ZeRO-2 resume after SIGKILL at 15 vs uninterrupted"));
  CHECK(test::count_lines_starting(r.output, "gpu-check: FAIL") == 2);
  CHECK_THAT(r.output, Catch::Contains("FAILED: 2 of 5 checks"));  // the main run's summary, the 4 of resume
  CHECK_THAT(r.output, Catch::Contains("testing: GPU_CHECK_PLANT=resume-without-optimizer"));
  CHECK_THAT(r.output, Catch::Contains("--only resume: the other sections are skipped"));
  CHECK_THAT(r.output, !Catch::Contains("head dim 48") && !Catch::Contains("probe steps") && !Catch::Contains("memory tiny"));
  // an unknown section is refused before anything runs
  auto bad = run(rehearse("", "--only resume,speed"));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.output, Catch::Contains("no section 'speed'") && Catch::Contains("fp32,bf16,resume,parallel"));
  // past the deadline: every run not started is a FAIL that says so (not timeout's usage
  // line for a negative limit), and the call exits non-zero
  auto late = run(rehearse("DEADLINE_S=6", "--only probe"));
  INFO(late.output);
  CHECK(late.exit_code == 1);
  CHECK(test::count_lines_starting(late.output, "gpu-check: FAIL") == 2);
  CHECK_THAT(late.output, Catch::Contains("FAIL probe steps under ZeRO-2: a run failed (train ") &&
                              Catch::Contains("/probe-plain: no time left before the deadline)"));
  CHECK_THAT(late.output, !Catch::Contains("timeout --help"));
  // no shard set: said at once
  auto none = run("cd " + test::source("") + " && GPU_CHECK_DATA=/nonexistent scripts/gpu-check.sh --rehearse 2>&1");
  CHECK(none.exit_code == 1);
  CHECK_THAT(none.output, Catch::Contains("no shard set in /nonexistent") && Catch::Contains("scripts/gpu-deps"));
}

TEST_CASE("gpu_check.py profile: a GPU's kernels by kind and the largest, from train's profile.csv") {
  test::TempDir dir;
  test::write_text(dir.path() + "/summary.json", R"({"config": {"profile_steps": [13, 14]}})");
  test::write_text(dir.path() + "/profile.csv",
                   "device,name,calls,total_us,share\n"
                   "cpu,aten::mm,400,9000.0,0.9000\n"
                   "cpu,aten::add,10,1000.0,0.1000\n"
                   "cuda,sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n,300,6000.0,0.6000\n"
                   "cuda,\"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
                   "cutlass::bfloat16_t>>\",48,2000.0,0.2000\n"
                   "cuda,void at::native::vectorized_elementwise_kernel<4>,900,1000.0,0.1000\n"
                   "cuda,void at::native::(anonymous namespace)::cunn_SoftMaxForward<8>,20,500.0,0.0500\n"
                   "cuda,ncclDevKernel_AllReduce_Sum_f32_RING_LL,2,500.0,0.0500\n");
  auto r = run("cd " + test::source("") + " && python3 scripts/gpu_check.py profile 1b " + dir.path() + " 2>&1");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.output, Catch::Contains("1b    profile of steps 13-14 on cuda: 10.0 ms in 5 kernels; matmul 60%, attention 20%, "
                                       "other element-wise and reductions 10%, softmax and loss 5%, collectives 5%"));
  CHECK_THAT(r.output, Catch::Contains(" 60.0%    300x  sm90_xmma_gemm"));
  CHECK(r.output.find("aten::mm") == std::string::npos);  // a GPU run's host operators are launches
}

TEST_CASE("gpu_check.py kind: SDPA's kernels are attention though their names carry CUTLASS types and sm<arch>") {
  // names as LibTorch's profiler gives them on an H100/H200 (flash, memory-efficient, cuDNN
  // SDPA; cuBLAS and nvjet GEMMs): a matmul-first match had counted attention as matmul
  const std::vector<std::pair<std::string, std::string>> names = {
      {"attention", "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, "
                    "cutlass::bfloat16_t>, false, true>(pytorch_flash::Flash_fwd_params)"},
      {"attention", "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
                    "cutlass::bfloat16_t, cutlass::arch::Sm80, true, 64, 64, 64, true, true>::Params)"},
      {"attention", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1_kernel0_0"},
      {"matmul", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off"
                 "_kernel__5x_cublas"},
      {"matmul", "nvjet_tst_192x192_64x3_2x1_v_bz_coopA_TNT"},
      {"matmul", "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_128x2_tn_align8>"},
      {"softmax and loss", "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, float>"},
      {"optimizer", "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>"},
      {"collectives", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"}};
  std::string command = "cd " + test::source("") + " && python3 scripts/gpu_check.py kind";
  for (const auto& [kind, name] : names) command += " '" + name + "'";
  auto r = run(command + " 2>&1");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  for (const auto& [kind, name] : names) {
    INFO(name);
    CHECK_THAT(r.output, Catch::Contains(kind + "\t" + name));
  }
}
