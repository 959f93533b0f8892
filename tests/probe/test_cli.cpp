// probe-grads end to end on tiny train runs: measure == train's --probe-steps log,
// measure -> fit -> summarize, and one clear message per kind of bad input.
#include "catch.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "shards/writer.h"
#include "learnable_shards.h"
#include "test_support.h"
#include "util/atomic_file.h"

using namespace shapelaw;
using namespace shapelaw::test;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {


struct Fixture {
  TempDir dir;
  std::string data, other_tokenizer, run, wide, shallow;
  std::string train_output;
  bool ok = true;
};

std::string train_cmd(const std::string& data, const std::string& out, int depth, int width, int steps) {
  return bin("train") + " --data " + data + " --out " + out + " --depth " + std::to_string(depth) + " --width " +
         std::to_string(width) +
         " --head-dim 16 --seq-len 32 --micro-batch 2 --batch-tokens 128 --warmup-steps 2 --lr 3e-3"
         " --threads 1 --peak-flops 1e10 --val-tokens 512 --log-every 0 --steps " + std::to_string(steps);
}

// Trained once for the whole file: a 3-layer run with a checkpoint every step and every
// step probed, a wider and a one-layer run, and a shard set with another tokenizer.
Fixture& fixture() {
  static Fixture f = [] {
    Fixture x;
    x.data = write_learnable_shards(x.dir.path() + "/shards", 'a');
    x.other_tokenizer = write_learnable_shards(x.dir.path() + "/other", 'b');
    x.run = x.dir.path() + "/d3w32";
    x.wide = x.dir.path() + "/d2w64";
    x.shallow = x.dir.path() + "/d1w32";
    for (auto cmd : {train_cmd(x.data, x.run, 3, 32, 4) + " --checkpoint-every 1 --keep-checkpoints 10 --probe-steps 1,2,3,4",
                     train_cmd(x.data, x.wide, 2, 64, 1), train_cmd(x.data, x.shallow, 1, 32, 1)}) {
      auto r = run(cmd);
      x.train_output += r.output;
      x.ok = x.ok && r.exit_code == 0;
    }
    return x;
  }();
  return f;
}

// train's grad_norms.csv: step -> (layer, component) -> norm
std::map<long long, std::map<std::pair<int, std::string>, double>> train_log(const std::string& run) {
  std::map<long long, std::map<std::pair<int, std::string>, double>> out;
  std::istringstream in(read_file(run + "/grad_norms.csv"));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::string step, layer, comp, norm;
    std::getline(s, step, ',');
    std::getline(s, layer, ',');
    std::getline(s, comp, ',');
    std::getline(s, norm, ',');
    out[std::stoll(step)][{std::stoi(layer), comp}] = std::stod(norm);
  }
  return out;
}

std::map<std::pair<int, std::string>, std::pair<double, double>> profile(const std::string& dir) {
  std::map<std::pair<int, std::string>, std::pair<double, double>> out;
  std::istringstream in(read_file(dir + "/grad_profile.csv"));
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "layer,component,norm,ratio,norm_sd");
  while (std::getline(in, line)) {
    std::stringstream s(line);
    std::string layer, comp, norm, ratio;
    std::getline(s, layer, ',');
    std::getline(s, comp, ',');
    std::getline(s, norm, ',');
    std::getline(s, ratio, ',');
    out[{std::stoi(layer), comp}] = {std::stod(norm), ratio.empty() ? -1 : std::stod(ratio)};
  }
  return out;
}

}  // namespace

TEST_CASE("probe-grads: measure equals what train --probe-steps logged for the same batch") {
  Fixture& f = fixture();
  INFO(f.train_output);
  REQUIRE(f.ok);
  auto log = train_log(f.run);
  REQUIRE(log.size() == 4);
  int slopes_compared = 0;
  // with an environment that asks for other kernels: probe-grads always runs the fixed set
  // (it re-executes itself), so the replay still equals train's log to the last digits
  bool fixed_pins = false;
#if defined(__x86_64__)
  fixed_pins = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  const std::string other_kernels = fixed_pins ? "OPENBLAS_CORETYPE=Prescott ATEN_CPU_CAPABILITY=default " : "";
  for (int step : {1, 2, 3}) {
    TempDir out;
    auto r = run(other_kernels + bin("probe-grads") + " measure " + f.run + " --step " + std::to_string(step) +
                 " --replay-train-step --threads 1 -q -o " + out.path());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    auto prof = profile(out.path());
    const auto& logged = log.at(step + 1);  // train logs step s with the weights after s-1 updates
    REQUIRE(prof.size() == logged.size());
    for (auto& [key, norm] : logged) {
      INFO("step " << step << " layer " << key.first << " " << key.second);
      CHECK(prof.at(key).first == Approx(norm).epsilon(1e-6));
    }
    json meta = json::parse(read_file(out.path() + "/grad_profile.json"));
    CHECK(meta["equals_train_log_step"] == step + 1);
    CHECK(meta["kernels"]["set"] == "fixed");
    if (fixed_pins) {
      CHECK(meta["kernels"]["blas_core"] == "Haswell");
      CHECK(meta["kernels"]["aten_capability"] == "avx2");
    }
    CHECK(meta["source"] == "train-replay");
    // fitting the replayed profile and the train log gives the same tau
    auto a = run(bin("probe-grads") + " fit " + out.path() + " --format json");
    auto b = run(bin("probe-grads") + " fit --train-log " + f.run + "/grad_norms.csv --log-step " +
                 std::to_string(step + 1) + " -o " + out.path() + "/from_log.json --format json");
    INFO(a.output << b.output);
    REQUIRE(a.exit_code == 0);
    INFO(b.output);
    REQUIRE(b.exit_code == 0);
    json ja = json::parse(read_file(out.path() + "/grad_fit.json")),
         jb = json::parse(read_file(out.path() + "/from_log.json"));
    CHECK(jb["step"] == step);
    CHECK(ja["fit"]["slope"].is_number() == jb["fit"]["slope"].is_number());
    if (ja["fit"]["slope"].is_number()) {
      CHECK(ja["fit"]["slope"].get<double>() == Approx(jb["fit"]["slope"].get<double>()).epsilon(1e-5));
      ++slopes_compared;
    }
  }
  CHECK(slopes_compared > 0);
}

TEST_CASE("probe-grads: measure on validation batches then fit then summarize") {
  Fixture& f = fixture();
  REQUIRE(f.ok);
  auto m = run(bin("probe-grads") + " measure " + f.run + " --step 4 --batches 3 --batch-size 4 --seed 5 --threads 1");
  INFO(m.output);
  REQUIRE(m.exit_code == 0);
  CHECK(m.output.find("block_norm") != std::string::npos);
  const std::string dir = f.run + "/grad_probe/step_4";
  auto prof = profile(dir);
  CHECK(prof.size() == 1 + 3 * 4 + 2);
  CHECK(prof.at({2, "block"}).second == 1.0);
  CHECK(prof.at({0, "block"}).first > 0);
  json meta = json::parse(read_file(dir + "/grad_profile.json"));
  CHECK(meta["format"] == "shapelaw.grad_profile");
  CHECK(meta["step"] == 4);
  CHECK(meta["depth"] == 3);
  CHECK(meta["width"] == 32);
  CHECK(meta["batches"] == 3);
  CHECK(meta["split"] == "validation");
  CHECK(meta["loss_mean"].get<double>() > 0);

  // the same flags give the same numbers (fixed slice); another seed another slice
  TempDir again, other;
  REQUIRE_OK(bin("probe-grads") + " measure " + f.run + " --step 4 -K 3 -B 4 --seed 5 --threads 1 -q -o " +
              again.path());
  CHECK(read_file(again.path() + "/grad_profile.csv") == read_file(dir + "/grad_profile.csv"));
  REQUIRE_OK(bin("probe-grads") + " measure " + f.run + " --step 4 -K 3 -B 4 --seed 6 --threads 1 -q -o " +
              other.path());
  CHECK(read_file(other.path() + "/grad_profile.csv") != read_file(dir + "/grad_profile.csv"));
  // micro-batching a batch changes nothing but rounding
  TempDir micro;
  REQUIRE_OK(bin("probe-grads") + " measure " + f.run + " --step 4 -K 3 -B 4 --seed 5 --micro-batch 1 --threads 1 -q -o " +
              micro.path());
  auto pm = profile(micro.path());
  for (auto& [k, v] : prof) CHECK(pm.at(k).first == Approx(v.first).epsilon(1e-4));

  auto fit = run(bin("probe-grads") + " fit " + dir + " --exclude-last 0");
  INFO(fit.output);
  REQUIRE(fit.exit_code == 0);
  CHECK(fit.output.find("D_crit") != std::string::npos);
  json g = json::parse(read_file(dir + "/grad_fit.json"));
  CHECK(g["format"] == "shapelaw.grad_fit");
  CHECK(g["run_id"] == "d3w32");
  CHECK(g["width"] == 32);
  CHECK(g["fit"]["n_points"] == 3);
  CHECK(g["fit"]["weighted"] == true);
  CHECK(g.contains("tau"));
  CHECK(g["fit"]["slope"].is_number());
  {
    // -o - is stdout: the record itself (no report after it), and no file named '-'
    TempDir cwd;
    auto so = run_stdout("cd " + cwd.path() + " && " + bin("probe-grads") + " fit " + dir + " --exclude-last 0 -o -");
    INFO(so.errors);
    INFO(so.output);
    REQUIRE(so.exit_code == 0);
    CHECK(json::parse(so.output) == g);
    CHECK_FALSE(fs::exists(cwd.path() + "/-"));
    auto mo = run(bin("probe-grads") + " measure " + f.run + " --step 4 -o -");
    CHECK(mo.exit_code == 1);
    CHECK(mo.output.find("measure writes a directory") != std::string::npos);
  }

  auto s = run(bin("probe-grads") + " summarize " + f.run + " -o " + f.dir.path() + "/tau.csv");
  INFO(s.output);
  REQUIRE(s.exit_code == 0);
  std::string csv = read_file(f.dir.path() + "/tau.csv");
  CHECK(csv.rfind("run,depth,width,step,tau,tau_lo,tau_hi,r2,dcrit,", 0) == 0);
  CHECK(csv.find("\nd3w32,3,32,4,") != std::string::npos);
  // '-' (the default) is stdout: the same table
  CHECK(run_stdout(bin("probe-grads") + " summarize " + f.run + " -o -").output == csv);
  CHECK(run_stdout(bin("probe-grads") + " summarize " + f.run).output == csv);
}

TEST_CASE("probe-grads: bad input gets one clear message and a non-zero exit") {
  Fixture& f = fixture();
  REQUIRE(f.ok);
  auto pg = bin("probe-grads");
  auto one_line = [](const std::string& out) {
    return std::count(out.begin(), out.end(), '\n') == 1 && out.rfind("probe-grads: error: ", 0) == 0;
  };

  auto missing = run(pg + " measure " + f.run + " --step 99");
  CHECK(missing.exit_code == 1);
  CHECK(one_line(missing.output));
  CHECK(missing.output.find("no complete checkpoint for step 99 (steps present: 1, 2, 3, 4)") != std::string::npos);

  // a checkpoint whose model.pt belongs to another architecture
  const std::string bad = f.dir.path() + "/bad";
  fs::create_directories(bad + "/checkpoints");
  fs::copy(f.run + "/checkpoints/step_000000000002", bad + "/checkpoints/step_000000000002",
           fs::copy_options::recursive);
  fs::copy_file(f.wide + "/checkpoints/step_000000000001/model.pt", bad + "/checkpoints/step_000000000002/model.pt",
                fs::copy_options::overwrite_existing);
  // with its checksums, a swapped model.pt is a damaged checkpoint, refused as such
  auto swapped = run(pg + " measure " + bad + " --step 2");
  CHECK(swapped.exit_code == 1);
  CHECK(one_line(swapped.output));
  CHECK(swapped.output.find("step_000000000002: damaged checkpoint: ") != std::string::npos);
  CHECK(swapped.output.find("model.pt: SHA-256 ") != std::string::npos);
  // without them (a checkpoint written before checksums existed) the architecture check speaks
  fs::remove(bad + "/checkpoints/step_000000000002/SHA256SUMS");
  auto inc = run(pg + " measure " + bad);
  CHECK(inc.exit_code == 1);
  CHECK(one_line(inc.output));
  CHECK(inc.output.find("incompatible checkpoint") != std::string::npos);

  // a checkpoint written by a newer train: refused by the one versioned-record check
  const std::string newer = f.dir.path() + "/newer";
  fs::create_directories(newer + "/checkpoints");
  fs::copy(f.run + "/checkpoints/step_000000000002", newer + "/checkpoints/step_000000000002",
           fs::copy_options::recursive);
  {
    const std::string state = newer + "/checkpoints/step_000000000002/state.json";
    json s = json::parse(read_file(state));
    s["version"] = 2;
    write_text(state, s.dump());
    fs::remove(newer + "/checkpoints/step_000000000002/SHA256SUMS");  // as a newer train's own
  }
  auto nv = run(pg + " measure " + newer);
  CHECK(nv.exit_code == 1);
  CHECK(one_line(nv.output));
  CHECK_THAT(nv.output, Catch::Contains("step_000000000002/state.json: field 'version': 2 is newer than this tool "
                                        "understands (at most 1)"));

  auto tok = run(pg + " measure " + f.run + " --data " + f.other_tokenizer);
  CHECK(tok.exit_code == 1);
  CHECK(one_line(tok.output));
  CHECK(tok.output.find("tokenizer") != std::string::npos);
  CHECK(tok.output.find("differs from the one the run was trained with") != std::string::npos);

  // one layer: measured (with a warning), but there is no decay to fit
  TempDir one;
  auto m1 = run(pg + " measure " + f.shallow + " -K 1 -B 2 -q -o " + one.path());
  INFO(m1.output);
  CHECK(m1.exit_code == 0);
  CHECK(m1.output.find("one layer") != std::string::npos);
  auto fit1 = run(pg + " fit " + one.path());
  CHECK(fit1.exit_code == 1);
  CHECK(one_line(fit1.output));
  CHECK(fit1.output.find("one layer: no decay to fit") != std::string::npos);

  auto norun = run(pg + " measure " + f.dir.path());
  CHECK(norun.exit_code == 1);
  CHECK(norun.output.find("not a train run") != std::string::npos);

  auto too_many = run(pg + " measure " + f.run + " -K 1000 -B 8");
  CHECK(too_many.exit_code == 1);
  CHECK(too_many.output.find("would repeat some") != std::string::npos);

  auto no_fit = run(pg + " summarize " + f.dir.path() + "/shards");
  CHECK(no_fit.exit_code == 1);
  CHECK(no_fit.output.find("no grad_fit.json") != std::string::npos);

  // --device cuda on a machine (or LibTorch build) without CUDA: refused, not a crash
  auto cuda = run(pg + " measure " + f.run + " --device cuda -K 1 -B 1 -q -o " + f.dir.path() + "/cuda");
  if (cuda.exit_code != 0) {
    CHECK(cuda.exit_code == 1);
    CHECK(one_line(cuda.output));
    CHECK(cuda.output.find("no CUDA device available") != std::string::npos);
  }
  auto bf16 = run(pg + " measure " + f.run + " --precision bf16");
  CHECK(bf16.exit_code == 1);
  CHECK(bf16.output.find("needs --device cuda") != std::string::npos);

  auto usage = run(pg + " measure");
  CHECK(usage.exit_code == 2);
}
