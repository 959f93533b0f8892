// The memory and cost plan against the published worked examples
// (../shared/reference: Rajbhandari et al. 2019 for the state, Korthikanti et al. 2022
// for the activations) and against its own accounting, term by term.
#include "catch.h"

#include <cmath>

#include "plan/layout.h"
#include "plan/memory_plan.h"
#include "test_support.h"
#include "util/error.h"

using namespace shapelaw;

namespace {

// Table 10's deep 7B model: 64 x 2896, head_dim 16, vocab 50257, untied.
PlanOptions seven_b(int world, int zero) {
  PlanOptions o;
  o.model.depth = 64;
  o.model.width = 2896;
  o.model.head_dim = 16;
  o.model.vocab_size = 50257;
  o.model.seq_len = 1024;
  o.micro_batch = 16;
  o.batch_tokens = 256 * 1024;
  o.steps = 141600000000 / o.batch_tokens;
  o.world = world;
  o.zero = zero;
  o.cuda = o.bf16 = true;
  return o;
}

double state(const Plan& p) { return double(p.weights + p.gradients + p.moments); }

}  // namespace

TEST_CASE("plan: the 7B model's parameters and per-rank state match the ZeRO paper's accounting") {
  Plan ddp = make_plan(seven_b(1, 0));
  CHECK(double(ddp.params.total) == Approx(6.73e9).epsilon(0.002));
  CHECK(ddp.weights == 4 * ddp.params.total);
  CHECK(ddp.gradients == 4 * ddp.params.total);
  CHECK(ddp.moments == 8 * ddp.params.total);
  CHECK(state(ddp) == Approx(108e9).epsilon(0.005));  // 16 B/param
  // ZeRO-1 on 8 ranks: 4 + 4 + 8/8 B/param; ZeRO-2: 4 + 12/8
  CHECK(state(make_plan(seven_b(8, 1))) == Approx(61e9).epsilon(0.01));
  CHECK(state(make_plan(seven_b(8, 2))) == Approx(37e9).epsilon(0.01));
  // rank 0 holds the larger shard when the ranks do not divide the parameters
  Plan three = make_plan([] { auto o = seven_b(1, 1); o.world = 2; o.batch_tokens = 32 * 1024; return o; }());
  CHECK(three.moments == 8 * ((three.params.total + 1) / 2));
  CHECK_FALSE(ddp.fits);  // 108 GB of state alone: not on an 80 GiB GPU
  CHECK(ddp.max_micro_batch == 0);
}

TEST_CASE("plan: per-layer activations, fused attention, against Korthikanti et al.'s 34·s·b·h") {
  PlanOptions o = seven_b(8, 1);
  const double s = 1024, b = 16, h = 2896;
  ActivationBytes a = activation_bytes(o, 16);
  // The published figure: 34·s·b·h bytes in 16-bit with dropout (1.61 GB per layer here).
  // This model saves 42·s·b·h: +8 for the fp32 residual stream (the block input and the
  // mid-block residual, saved by the norms), +4 because v is a view that keeps the whole
  // qkv output alive, +2 for the fused kernel's saved output, -2 without dropout masks.
  // Plus small terms: the layernorms' mean and rstd, the kernel's log-sum-exp per head.
  const int64_t heads = 2896 / 16;
  CHECK(a.per_layer - int64_t(42 * s * b * h) == 2 * 2 * 4 * int64_t(s * b) + 4 * heads * int64_t(s * b));
  // Full recomputation keeps one block input per layer: the reference's ~6 GB for 64
  // layers in 16-bit, twice that here with the fp32 residual stream.
  CHECK(a.layer_input == int64_t(4 * s * b * h));
  CHECK(64 * double(a.layer_input) == Approx(2 * 6.07e9).epsilon(0.01));
  CHECK(a.with_recompute < a.without_recompute / 4);
  CHECK(a.with_recompute >= 64 * a.layer_input + a.per_layer);
  // the head: logits s·b·V would be 3.3 GB in fp32 (unfused: three of them, log-probs and
  // two gradients); chunked (model/head_loss.h) it keeps dh (fp32 s·b·h) and the fp32 dU,
  // and one chunk of 1280 rows: bf16 logits and, while log_softmax runs, their fp32 copy
  // (ATen converts on read only Half) and the fp32 log-probabilities
  CHECK(head_chunk_rows(50257) == 1280);
  CHECK(a.head == int64_t(4 * s * b * h + 4 * 50257 * h + 1280 * (2 + 4 + 4) * 50257.0));
  CHECK(a.head < 3 * 4 * s * b * 50257 / 6);  // under a sixth of the unfused head's
  // bf16 autocast caches a bf16 copy of every matmul weight
  CHECK(a.weight_copies == 2 * (count_parameters(o.model).non_embedding + 50257 * int64_t(h)));
}

TEST_CASE("plan: the CPU textbook attention keeps the s² matrix, the fused CPU head only the logits, the GPU's a chunk") {
  PlanOptions o;
  o.model.depth = 2;
  o.model.width = 128;
  o.model.head_dim = 32;
  o.model.vocab_size = 4096;
  o.model.seq_len = 256;
  o.micro_batch = 4;
  o.batch_tokens = 4 * 256;
  o.steps = 10;
  const int64_t n = 4 * 256, unit = n * 128, heads = 4;
  ActivationBytes a = activation_bytes(o, 4);
  // fp32: x, h, two norm outputs, q/k/v copies, proj input, fc and gelu outputs (4W each)
  CHECK(a.per_layer == 4 * (16 * unit + heads * 256 * n) + 2 * 2 * 4 * n);
  CHECK(a.head == 4 * n * 4096);
  PlanOptions cuda = o;
  cuda.cuda = true;
  ActivationBytes f = activation_bytes(cuda, 4);
  CHECK(f.per_layer < a.per_layer);  // no s² term
  // chunked on a GPU: one chunk holds every row here, and dh and dU are kept besides; in
  // fp32 the chunk is its logits and log-probabilities (no copy before, no cast after)
  CHECK(head_chunk_rows(4096) >= n);
  CHECK(f.head == 4 * unit + 4 * 4096 * 128 + n * 2 * 4 * 4096);
  // twice the sequence: the textbook attention's term grows 4x, the fused one 2x
  PlanOptions longer = o;
  longer.model.seq_len = 512;
  longer.batch_tokens = 4 * 512;
  CHECK(activation_bytes(longer, 4).per_layer - 2 * a.per_layer == 4 * heads * 256 * n * 2);
}

TEST_CASE("plan: FLOPs, time and GPU-hours of the 7B run, recomputation costs one more block forward") {
  Plan p = make_plan(seven_b(8, 1));
  CHECK(p.flops_per_run == Approx(flops_per_token(p.options.model) * double(p.tokens)));
  CHECK(p.flops_per_run > 5e21);  // "the 7B runs alone are ~6e21 FLOPs each"
  CHECK(p.flops_per_run < 7e21);
  CHECK(p.seconds == Approx(p.flops_per_run / (0.40 * 989e12 * 8)));
  CHECK(p.gpu_hours == Approx(p.seconds * 8 / 3600));
  PlanOptions r = seven_b(8, 1);
  r.activation_checkpointing = true;
  Plan q = make_plan(r);
  const double extra = q.flops_per_step / p.flops_per_step;
  CHECK(extra > 1.25);  // about +1/3 of the block FLOPs, the head not recomputed
  CHECK(extra < 1.34);
  CHECK(q.peak < p.peak);
}

TEST_CASE("plan: the largest micro-batch that fits is the largest divisor of the per-rank batch under the limit") {
  PlanOptions o = seven_b(8, 1);
  o.activation_checkpointing = true;
  Plan p = make_plan(o);
  REQUIRE(p.max_micro_batch > 0);
  CHECK(p.sequences_per_rank % p.max_micro_batch == 0);
  PlanOptions at = o;
  at.micro_batch = p.max_micro_batch;
  CHECK(make_plan(at).fits);
  for (int64_t m = p.max_micro_batch + 1; m <= p.sequences_per_rank; ++m) {
    if (p.sequences_per_rank % m) continue;
    at.micro_batch = m;
    CHECK_FALSE(make_plan(at).fits);
  }
  o.gpu_memory = 141e9;  // an H200: more fits
  CHECK(make_plan(o).max_micro_batch >= p.max_micro_batch);
}

TEST_CASE("plan: a CUDA run needs its peak, the allocator's reserve and the runtime, within a physical 80 GB card") {
  PlanOptions o = seven_b(4, 2);
  o.micro_batch = 2;
  CHECK(o.gpu_memory == 81559.0 * 1048576.0);  // an H100 80GB's total as nvidia-smi reports it, not 80 GiB
  Plan p = make_plan(o);
  CHECK(p.reserve == int64_t(std::ceil(double(p.peak) * 0.10)));
  CHECK(p.runtime == runtime_overhead_bytes(o));
  CHECK(p.required == p.peak + p.reserve + p.runtime);
  CHECK(p.margin == int64_t(o.gpu_memory) - p.required);
  CHECK(p.fits == (p.margin >= 0));
  // NCCL's buffers only with several ranks; nothing of it on CPU
  PlanOptions one = o, cpu = o;
  one.world = 1;
  cpu.cuda = cpu.bf16 = false;
  CHECK(runtime_overhead_bytes(o) > runtime_overhead_bytes(one));
  CHECK(runtime_overhead_bytes(one) >= int64_t(1) << 30);
  Plan c = make_plan(cpu);
  CHECK(c.required == c.peak);
  // a peak that fits the card but not with what the runtime holds is refused
  PlanOptions tight = o;
  tight.gpu_memory = double(p.peak) + 1;
  Plan t = make_plan(tight);
  CHECK_FALSE(t.fits);
  CHECK_THAT(format_plan(t), Catch::Contains("DOES NOT FIT") && Catch::Contains("margin -"));
  CHECK_THAT(format_plan(p), Catch::Contains("allocator reserve") && Catch::Contains("CUDA runtime"));
  CHECK(to_json(p)["margin"] == p.margin);
  CHECK(to_json(p)["bytes_per_rank"]["required"] == p.required);
}

TEST_CASE("plan: a probe step is planned as any other step, and the plan says how many there are") {
  // (under ZeRO a probe step's per-layer norms come from the ranks' gradient slices:
  // tests/train's --zero 2 case shows its losses, norms and measured peak)
  PlanOptions o = seven_b(4, 2);
  o.micro_batch = 1;
  Plan plain = make_plan(o);
  o.probe_steps = 2;
  Plan probed = make_plan(o);
  CHECK(probed.peak == plain.peak);
  CHECK(probed.required == plain.required);
  CHECK_THAT(format_plan(probed), Catch::Contains("probe steps: 2, each planned as a normal step"));
  CHECK(to_json(probed)["probe_steps"] == 2);
  CHECK_FALSE(to_json(probed)["bytes_per_rank"].contains("probe_step_extra"));
  // the 7B run with probe steps: ZeRO-2 over 4 GPUs, as without them
  PlanOptions seven = seven_b(1, 0);
  seven.probe_steps = 1;
  Plan chosen = choose_layout(seven, 8);
  CHECK(chosen.fits);
  CHECK(chosen.options.world == 4);
  CHECK(chosen.options.zero == 2);
  seven.probe_steps = 0;
  CHECK(choose_layout(seven, 8).required == chosen.required);
}

TEST_CASE("plan: choose_layout puts small runs on one GPU and the 7B run on several with ZeRO") {
  PlanOptions small = seven_b(1, 0);
  small.model.depth = 8;
  small.model.width = 512;
  small.model.head_dim = 64;
  Plan s = choose_layout(small, 8);
  CHECK(s.fits);
  CHECK(s.options.world == 1);
  CHECK(s.options.micro_batch == 16);  // never above the requested micro-batch
  CHECK_FALSE(s.options.activation_checkpointing);
  CHECK(layout_flags(s) == "--micro-batch 16");
  Plan big = choose_layout(seven_b(1, 0), 8);
  CHECK(big.fits);
  CHECK(big.options.world == 4);
  CHECK(big.options.zero == 2);  // ZeRO-2 only because ZeRO-1 does not fit 4 GPUs without recomputation
  PlanOptions z1 = seven_b(4, 1);
  z1.micro_batch = 1;
  CHECK_FALSE(make_plan(z1).fits);
  CHECK(big.required <= big.options.gpu_memory);  // with the reserve and the runtime, not the peak alone
  CHECK(big.margin >= 0);
  CHECK_THAT(layout_flags(big), Catch::Contains("--zero 2"));
  PlanOptions at8 = seven_b(8, 1);  // at 8 GPUs ZeRO-1 with recomputation fits: the lower stage is kept
  at8.micro_batch = 1;
  at8.activation_checkpointing = true;
  REQUIRE(make_plan(at8).fits);
  Plan none = choose_layout(seven_b(1, 0), 1);  // one GPU cannot hold 108 GB of state
  CHECK_FALSE(none.fits);
  std::string table = format_grid({{"t9-8x512", s}, {"t10-7B-64x2896", big}});
  CHECK_THAT(table, Catch::Contains("t10-7B-64x2896"));
  CHECK_THAT(table, Catch::Contains("total"));
  CHECK_THAT(table, Catch::Contains("2/2"));
  auto j = grid_json({{"a", s}, {"b", none}});
  CHECK(j["fits"] == false);
  CHECK(j["totals"]["gpu_hours"].get<double>() == Approx(s.gpu_hours + none.gpu_hours));
}

TEST_CASE("plan: host memory at a rank's start is its whole fp32 model, which ZeRO does not shard") {
  // train draws every weight on the CPU (the same on any device), then moves the model
  const Plan z2 = make_plan(seven_b(4, 2));
  CHECK(z2.host == 4 * z2.params.allocated);
  CHECK(z2.host == z2.weights);
  CHECK(z2.host > z2.gradients);  // the GPU's shards are smaller than what the host held first
  PlanOptions one = seven_b(1, 1);  // a rank's moment slice is read on the host at a resume
  one.micro_batch = 1;
  CHECK(make_plan(one).host == make_plan(one).moments);
  CHECK(to_json(z2)["host_bytes_per_rank"] == z2.host);
  CHECK_THAT(format_plan(z2), Catch::Contains("host memory") && Catch::Contains(format_bytes(double(z2.host))));
  // the grid names the run whose ranks together hold the most, and the total
  const Plan small = make_plan(seven_b(8, 1));
  PlanOptions single = seven_b(1, 0);
  single.model.depth = 4;
  const Plan lone = make_plan(single);
  const std::string table = format_grid({{"lone", lone}, {"seven-b", z2}, {"eight", small}});
  const double most = std::max(double(z2.host) * 4, double(small.host) * 8);
  CHECK_THAT(table, Catch::Contains("host memory") && Catch::Contains(format_bytes(most)));
  CHECK_THAT(table, Catch::Contains(most == double(small.host) * 8 ? "eight's 8 rank(s)" : "seven-b's 4 rank(s)"));
}

TEST_CASE("plan: sizes, JSON and the human table, bad options name the flag") {
  CHECK(parse_byte_size("80GiB") == 80.0 * (1ull << 30));
  CHECK(parse_byte_size("141GB") == 141e9);
  CHECK(parse_byte_size("1e9") == 1e9);
  CHECK_THROWS_WITH(parse_byte_size("80 gigs"), Catch::Contains("80 gigs"));
  CHECK_THROWS_AS(parse_byte_size("-1GB"), Error);
  Plan p = make_plan(seven_b(8, 1));
  auto j = to_json(p);
  CHECK(j["fits"].is_boolean());
  CHECK(j["bytes_per_rank"]["optimizer_moments"] == p.moments);
  CHECK(j["attention"] == "fused");
  std::string text = format_plan(p);
  CHECK_THAT(text, Catch::Contains("AdamW moments"));
  CHECK_THAT(text, Catch::Contains("ZeRO-1"));
  PlanOptions bad = seven_b(8, 1);
  bad.batch_tokens = 100 * 1024;  // 100 sequences over 8 ranks x 16
  CHECK_THROWS_WITH(make_plan(bad), Catch::Contains("not divisible by micro_batch x world"));
  bad = seven_b(8, 3);
  CHECK_THROWS_WITH(make_plan(bad), Catch::Contains("--zero"));
  bad = seven_b(8, 1);
  bad.mfu = 1.5;
  CHECK_THROWS_WITH(make_plan(bad), Catch::Contains("--mfu"));
}

TEST_CASE("plan: read_grid gives each row's train flags, a bad row names its line") {
  auto rows = read_grid(test::source("pipelines/grids/paper.grid"));
  REQUIRE(rows.size() == 30);
  CHECK(rows.back().run == "t10-7B-64x2896");
  CHECK(rows.back().train_args ==
        std::vector<std::string>{"--depth", "64", "--width", "2896", "--tokens", "141600000000", "--head-dim", "16"});
  test::TempDir dir;
  test::write_text(dir.path() + "/bad.grid", "# comment\nok 2 16\nbroken 2\n");
  CHECK_THROWS_WITH(read_grid(dir.path() + "/bad.grid"), Catch::Contains("bad.grid:3:"));
}
