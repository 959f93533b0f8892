// Nothing lost, nothing mixed (issue 28): one run per --out (a lock, and no shard or other
// run's directory), a full disk during a checkpoint, checkpoint checksums with fallback,
// a divergence stop that keeps a checkpoint that evaluates finite, and SIGTERM/SIGINT/
// SIGUSR1 -> checkpoint, exit, bit-identical resume. Each reproduces a failure of before.
#include "catch.h"

#include <csignal>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "test_support.h"
#include "train/checkpoint.h"
#include "train/train_config.h"
#include "train_fixture.h"
#include "util/atomic_file.h"

using namespace shapelaw;
using namespace shapelaw::test;
namespace fs = std::filesystem;

namespace {

const std::string kCheckpoint4 = "/checkpoints/step_000000000004", kCheckpoint8 = "/checkpoints/step_000000000008";

// A train process in the background (sh -c 'exec ...': the pid is train's), its output in log.
struct Background {
  pid_t pid = -1;
  std::string log;
  Background(const std::string& command, std::string log_path) : log(std::move(log_path)) {
    pid = ::fork();
    if (pid == 0) {
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), (char*)nullptr);
      ::_exit(127);
    }
  }
  int wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    pid = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  ~Background() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      wait();
    }
  }
};

// Waits (at most 30 s) until metrics.jsonl has at least `steps` train lines.
bool wait_for_steps(const std::string& out, size_t steps) {
  for (int i = 0; i < 3000; ++i) {
    if (fs::exists(out + "/metrics.jsonl")) {
      std::ifstream in(out + "/metrics.jsonl");
      std::string line;
      size_t n = 0;
      while (std::getline(in, line)) n += line.find("\"train\"") != std::string::npos;
      if (n >= steps) return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

void overwrite(const std::string& path, std::streamoff at, const std::string& bytes) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(at);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

}  // namespace

TEST_CASE("train: one run per --out: a second process is refused, and so are shard and other runs' directories") {
  TempDir tmp;
  const std::string out = tmp.path() + "/run";
  // before: both exited 0 and mixed their checkpoints and summary.json
  Background first(base_args(out) + " --steps 100000 --checkpoint-every 0", tmp.path() + "/first.log");
  REQUIRE(wait_for_steps(out, 2));
  auto second = run(base_args(out) + " --steps 100000 --checkpoint-every 0");
  CHECK(second.exit_code == 1);
  CHECK(second.output.find("is in use by another train process (pid " + std::to_string(first.pid)) !=
        std::string::npos);
  ::kill(first.pid, SIGINT);
  CHECK(first.wait() == 130);

  // --out = the shard directory, or any shard directory
  auto into_data = run(base_args(dataset()) + " --steps 2");
  CHECK(into_data.exit_code == 1);
  CHECK(into_data.output.find("is the --data directory") != std::string::npos);
  const std::string other_shards = tmp.path() + "/other-shards";
  fs::copy(dataset(), other_shards);
  auto into_shards = run(base_args(other_shards) + " --steps 2");
  CHECK(into_shards.exit_code == 1);
  CHECK(into_shards.output.find("is a shard directory (it has a manifest.json)") != std::string::npos);
  CHECK_FALSE(fs::exists(other_shards + "/checkpoints"));

  // a finished run's directory, its checkpoints gone, with other binding flags
  const std::string done = tmp.path() + "/done";
  REQUIRE_OK(base_args(done) + " --steps 3");
  const std::string summary = read_file(done + "/summary.json");
  // rerunning the finished run changes nothing: before, summary.json was rewritten (memory zeros)
  auto again = run(base_args(done) + " --steps 3");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK(again.output.find("already complete") != std::string::npos);
  CHECK(read_file(done + "/summary.json") == summary);
  fs::remove_all(done + "/checkpoints");
  auto mixed = run(base_args(done) + " --steps 3 --weight-decay 0.2");
  CHECK(mixed.exit_code == 1);
  CHECK(mixed.output.find("holds a finished run with other binding options") != std::string::npos);
  CHECK(mixed.output.find("weight_decay: checkpoint 0.1, now 0.2") != std::string::npos);
}

TEST_CASE("train: a full disk during a checkpoint is one clear line, exit 1, the earlier checkpoints intact") {
  TempDir tmp;
  const std::string straight = tmp.path() + "/straight", full = tmp.path() + "/full", last = tmp.path() + "/last";
  const std::string opts = " --steps 12 --checkpoint-every 4";
  REQUIRE_OK(base_args(straight) + opts);
  // A file-size limit makes every write past 200 KiB fail with EFBIG as a full disk fails
  // with ENOSPC: model.pt (~140 KB) fits, optimizer.pt (~260 KB) does not.
  const std::string limited = "ulimit -f 200; trap '' XFSZ; ";
  REQUIRE(run(base_args(full) + opts + " --debug-kill-at-step 6").exit_code == 128 + 9);  // step 4 written
  auto r = run(limited + base_args(full) + opts);
  INFO(r.output);
  CHECK(r.exit_code == 1);  // before: c10::Error, std::terminate, SIGABRT (134) and a stack trace
  CHECK(r.output.find("train: error: checkpoint of step 8 not written: ") != std::string::npos);
  CHECK(r.output.find("optimizer.pt: cannot write checkpoint file: File too large") != std::string::npos);
  CHECK(r.output.find("a rerun resumes from " + full + kCheckpoint4) != std::string::npos);
  CHECK(r.output.find("terminate") == std::string::npos);
  CHECK(r.output.find("Exception raised from") == std::string::npos);
  for (auto& e : fs::directory_iterator(full + "/checkpoints"))
    CHECK(e.path().filename().string().rfind(".tmp-", 0) != 0);
  CHECK_FALSE(fs::exists(full + kCheckpoint8));
  // step 4 is whole: the rerun with space resumes from it to the uninterrupted run's losses
  auto resumed = run(base_args(full) + opts);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resuming from " + full + kCheckpoint4) != std::string::npos);
  CHECK(train_losses(full) == train_losses(straight));

  // --checkpoint-every 0: the only checkpoint, at the end, fails the same way
  auto only = run(limited + base_args(last) + " --steps 4 --checkpoint-every 0");
  CHECK(only.exit_code == 1);
  CHECK(only.output.find("checkpoint of step 4 not written") != std::string::npos);
  CHECK(only.output.find("no earlier checkpoint exists") != std::string::npos);
  CHECK_FALSE(fs::exists(last + "/summary.json"));
}

TEST_CASE("train: checkpoint files are checksummed, a damaged newest one falls back to the previous, saying so") {
  TempDir tmp;
  const std::string straight = tmp.path() + "/straight", out = tmp.path() + "/run";
  const std::string opts = " --steps 12 --checkpoint-every 4";
  REQUIRE_OK(base_args(straight) + opts);
  REQUIRE(run(base_args(out) + opts + " --debug-kill-at-step 10").exit_code == 128 + 9);  // steps 4 and 8
  // SHA256SUMS is what sha256sum -c checks
  auto sums = run("cd " + out + kCheckpoint8 + " && sha256sum -c SHA256SUMS");
  INFO(sums.output);
  CHECK(sums.exit_code == 0);
  for (auto f : {"model.pt: OK", "optimizer.pt: OK", "rng.pt: OK", "state.json: OK"})
    CHECK(sums.output.find(f) != std::string::npos);

  // 4 changed bytes in model.pt: before, they loaded silently and the run ended with another loss
  overwrite(out + kCheckpoint8 + "/model.pt", 70000, "\x01\x02\x03\x04");
  auto eval_newest = run(bin("train") + " eval " + out + " --split validation");
  INFO(eval_newest.output);
  CHECK(eval_newest.exit_code == 0);
  // prefixed with the tool's name like every line a tool prints (a bare line would not say which tool warned)
  CHECK(eval_newest.output.find("train eval: warning: checkpoint " + out + kCheckpoint8 + " is damaged") !=
        std::string::npos);
  auto probe_newest = run(bin("probe-grads") + " measure " + out + " --out " + out + "-probe -K 1 -B 2 --threads 1");
  INFO(probe_newest.output);
  CHECK(probe_newest.output.find("probe-grads: warning: checkpoint " + out + kCheckpoint8 + " is damaged") !=
        std::string::npos);
  CHECK(eval_newest.output.find("model.pt: SHA-256 ") != std::string::npos);
  CHECK(eval_newest.output.find("\"step\": 4") != std::string::npos);
  auto eval_named = run(bin("train") + " eval " + out + " --step 8 --split validation");
  CHECK(eval_named.exit_code == 1);
  CHECK(eval_named.output.find("damaged checkpoint") != std::string::npos);

  auto resumed = run(base_args(out) + opts);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("falling back to the previous complete checkpoint: " + out + kCheckpoint4) !=
        std::string::npos);
  CHECK(resumed.output.find("resuming from " + out + kCheckpoint4) != std::string::npos);
  CHECK(train_losses(out) == train_losses(straight));
  CHECK(fs::exists(out + "/checkpoints/damaged-step_000000000008/model.pt"));  // kept for inspection
}

TEST_CASE("train: a diverging run stops early and keeps only checkpoints that evaluate finite") {
  TempDir tmp;
  // lr 1: the loss climbs for a few steps, then passes 2 x ln(64); before, only a
  // non-finite loss stopped the run, and the "last good checkpoint" had the diverged weights
  const std::string out = tmp.path() + "/spike";
  auto r = run(base_args(out) + " --steps 40 --checkpoint-every 1 --lr 1 --min-lr 1 --warmup-steps 5 --grad-clip 0");
  INFO(r.output);
  CHECK(r.exit_code == 1);
  CHECK(r.output.find("the run diverged at step ") != std::string::npos);
  CHECK(r.output.find("above the divergence limit") != std::string::npos);
  CHECK(r.output.find("moved aside (diverged-step_") != std::string::npos);
  CHECK(r.output.find("Last good checkpoint: " + out + "/checkpoints/step_") != std::string::npos);
  auto e = run(bin("train") + " eval " + out + " --split validation");
  INFO(e.output);
  CHECK(e.exit_code == 0);
  json record = json::parse(e.output.substr(0, e.output.rfind("}") + 1));
  CHECK(record["loss"].is_number());
  CHECK(record["loss"].get<double>() < 2 * std::log(64.0));

  // lr 1e30: NaN at step 2; the checkpoint of step 1 is set aside, and evaluating it fails
  const std::string nan = tmp.path() + "/nan";
  auto n = run(base_args(nan) + " --steps 20 --checkpoint-every 1 --lr 1e30 --min-lr 1e30 --warmup-steps 0 --grad-clip 0");
  INFO(n.output);
  CHECK(n.exit_code == 1);
  CHECK(n.output.find("non-finite loss (NaN)") != std::string::npos);
  CHECK(n.output.find("Last good checkpoint: none") != std::string::npos);
  auto en = run(bin("train") + " eval " + nan + "/checkpoints/diverged-step_000000000001 --split validation");
  INFO(en.output);
  CHECK(en.exit_code == 1);  // before: exit 0 with "loss nan"
  CHECK(en.output.find("model.pt: the loss is NaN") != std::string::npos);
  CHECK(en.output.find("the model diverged") != std::string::npos);
}

TEST_CASE("train: SIGTERM after a step: a checkpoint there, exit 143, the resumed run is bit-identical") {
  TempDir tmp;
  const std::string straight = tmp.path() + "/straight", stopped = tmp.path() + "/stopped";
  const std::string opts = " --steps 12 --checkpoint-every 100 --probe-steps 9";
  REQUIRE_OK(base_args(straight) + opts);
  auto r = run(base_args(stopped) + opts + " --debug-kill-at-step 7 --debug-kill-phase sigterm");
  INFO(r.output);
  CHECK(r.exit_code == 128 + SIGTERM);  // before: killed, steps 1-7 lost (no checkpoint before the end)
  CHECK(r.output.find("SIGTERM received: stopped after step 7 of 12, checkpoint " + stopped +
                      "/checkpoints/step_000000000007 written; rerun the same command to resume") != std::string::npos);
  CHECK_FALSE(fs::exists(stopped + "/summary.json"));
  auto resumed = run(base_args(stopped) + opts);
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(resumed.output.find("resuming from " + stopped + "/checkpoints/step_000000000007") != std::string::npos);
  CHECK(train_losses(stopped) == train_losses(straight));
  json a = json::parse(read_file(straight + "/summary.json")), b = json::parse(read_file(stopped + "/summary.json"));
  CHECK(a["final_val_loss"] == b["final_val_loss"]);
  CHECK(read_file(straight + "/grad_norms.csv") == read_file(stopped + "/grad_norms.csv"));
}

TEST_CASE("train: SIGINT and SIGUSR1 from outside stop at a step boundary with a checkpoint, resume is exact") {
  for (int signal : {SIGINT, SIGUSR1}) {
    TempDir tmp;
    const std::string out = tmp.path() + "/run", reference = tmp.path() + "/reference";
    const std::string opts = " --steps 100000 --checkpoint-every 0";
    Background job(base_args(out) + opts, tmp.path() + "/job.log");
    REQUIRE(wait_for_steps(out, 3));
    ::kill(job.pid, signal);
    CHECK(job.wait() == 128 + signal);
    const std::string log = read_file(job.log);
    INFO(log);
    CHECK(log.find(std::string(signal == SIGINT ? "SIGINT" : "SIGUSR1") + " received: stopped after step ") !=
          std::string::npos);
    const auto kept = train_losses(out);
    REQUIRE(kept.size() >= 3);
    const int64_t k = int64_t(kept.size());
    char name[32];
    std::snprintf(name, sizeof name, "step_%012lld", (long long)k);
    CHECK(fs::exists(out + "/checkpoints/" + name + "/COMPLETE"));
    // resume and stop 3 steps later (SIGKILL); the same 100000-step schedule uninterrupted
    // to that step gives the same losses, bit for bit
    const std::string until = " --debug-kill-at-step " + std::to_string(k + 3);
    CHECK(run(base_args(out) + opts + until).exit_code == 128 + 9);
    CHECK(run(base_args(reference) + opts + until).exit_code == 128 + 9);
    CHECK(train_losses(out).size() == size_t(k + 3));
    CHECK(train_losses(out) == train_losses(reference));
  }
}

TEST_CASE("train: option values that are not numbers or out of range are refused naming the flag") {
  // before: --threads -3, --val-every -1 and --lr nan were accepted (NaN passes "lr <= 0")
  auto refused = [](auto set, const std::string& message) {
    TrainConfig c;
    c.data = "d", c.out = "o", c.steps = 2;
    set(c);
    CHECK_THROWS_WITH(c.validate(), Catch::Contains(message));
  };
  refused([](TrainConfig& c) { c.threads = -3; }, "--threads must be >= 0 (0: all cores; got -3)");
  refused([](TrainConfig& c) { c.val_every = -1; }, "--val-every must be >= 0");
  refused([](TrainConfig& c) { c.lr = std::nan(""); }, "--lr must be a finite number > 0 (got nan)");
  refused([](TrainConfig& c) { c.grad_clip = std::nan(""); }, "--grad-clip must be >= 0 (got nan)");
  refused([](TrainConfig& c) { c.divergence_factor = -1; }, "--divergence-factor must be >= 0");
  refused([](TrainConfig& c) { c.beta2 = std::nan(""); }, "--beta2 must be in [0, 1) (got nan)");
  TempDir tmp;
  const std::string out = tmp.path() + "/o";
  auto nan_flag = run(base_args(out) + " --steps 2 --lr nan");  // the tool says it too
  CHECK(nan_flag.exit_code == 1);
  CHECK(nan_flag.output.find("train: error: train config: --lr must be a finite number > 0 (got nan)") !=
        std::string::npos);
  // a relative --data is recorded as an absolute path
  auto rel = run("cd " + fs::path(dataset()).parent_path().string() + " && " + bin("train") + " --data " +
                 fs::path(dataset()).filename().string() + " --out " + out +
                 " --depth 1 --width 32 --head-dim 16 --seq-len 32 --micro-batch 2 --batch-tokens 128 --steps 1 "
                 "--threads 1 --peak-flops 1e10 --val-tokens 256 --log-every 0");
  INFO(rel.output);
  REQUIRE(rel.exit_code == 0);
  json s = json::parse(read_file(out + "/summary.json"));
  CHECK(s["config"]["data"] == fs::path(dataset()).lexically_normal().string());
}

TEST_CASE("train: a run that reads its train split more than once says so, in the log and in summary.json") {
  // before: repeated epochs were silent
  TempDir tmp;
  const std::string out = tmp.path() + "/long", short_out = tmp.path() + "/short";
  auto r = run(base_args(out) + " --steps 240 --checkpoint-every 0");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("train split") != std::string::npos);
  CHECK(r.output.find("times over: the data repeats") != std::string::npos);
  CHECK(r.output.find("note: the train split is read again from step ") != std::string::npos);
  json s = json::parse(read_file(out + "/summary.json"));
  CHECK(s["train_epochs"].get<double>() > 1);
  bool stated = false;
  for (auto& cap : s["caps"]) stated |= cap.get<std::string>().find("was read") != std::string::npos;
  CHECK(stated);
  REQUIRE_OK(base_args(short_out) + " --steps 3");
  json t = json::parse(read_file(short_out + "/summary.json"));
  CHECK(t["train_epochs"].get<double>() < 1);
  CHECK(t["caps"].dump().find("was read") == std::string::npos);
}

namespace {
// every train row's loss and gradient norm, in step order
std::vector<std::pair<double, double>> loss_and_norm(const std::string& out) {
  std::vector<std::pair<double, double>> rows;
  for (auto& j : read_jsonl(out + "/metrics.jsonl"))
    if (j["kind"] == "train") rows.emplace_back(j["loss"].get<double>(), j["grad_norm"].get<double>());
  return rows;
}
std::string diverged_line(const std::string& output, const std::string& out) {
  auto a = output.find("the run diverged at step ");
  if (a == std::string::npos) return "";
  std::string line = output.substr(a, output.find('\n', a) - a);
  for (auto at = line.find(out); at != std::string::npos; at = line.find(out)) line.replace(at, out.size(), "OUT");
  return line;
}
}  // namespace

TEST_CASE("train --readout-every: the values read back in batches are every step's, a late divergence stops alike") {
  // What a GPU does by default (a readout every --log-every steps, the device running ahead
  // in between), on the CPU: the same rows, probes, checkpoints and weights as a readout
  // every step, a SIGTERM acted on at the next readout, and a divergence found at a later
  // readout reported and set aside exactly as at once.
  TempDir tmp;
  const std::string each = tmp.path() + "/each", batched = tmp.path() + "/batched";
  const std::string opts = " --steps 20 --checkpoint-every 100 --probe-steps 3,11";
  auto a = run(base_args(each) + opts + " --readout-every 1");
  auto b = run(base_args(batched) + opts + " --readout-every 5");
  INFO(a.output << b.output);
  REQUIRE(a.exit_code == 0);
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(loss_and_norm(each).size() == 20);
  CHECK(loss_and_norm(batched) == loss_and_norm(each));
  CHECK(read_file(batched + "/grad_norms.csv") == read_file(each + "/grad_norms.csv"));
  json sa = json::parse(read_file(each + "/summary.json")), sb = json::parse(read_file(batched + "/summary.json"));
  CHECK(sa["final_val_loss"] == sb["final_val_loss"]);
  CHECK(sa["params_sha256"] == sb["params_sha256"]);
  CHECK(sb["config"]["readout_every"] == 5);  // recorded, not binding: resuming with another is allowed
  CHECK(sa["binding_config"] == sb["binding_config"]);

  // SIGTERM after step 7 with readouts at 5, 10, ...: acted on at the next readout (step 7 is
  // one, as the kill step is), the resumed run the same bits
  const std::string stopped = tmp.path() + "/stopped";
  auto s = run(base_args(stopped) + opts + " --readout-every 5 --debug-kill-at-step 7 --debug-kill-phase sigterm");
  INFO(s.output);
  CHECK(s.exit_code == 128 + SIGTERM);
  CHECK(s.output.find("SIGTERM received: stopped after step 7 of 20") != std::string::npos);
  auto resumed = run(base_args(stopped) + opts + " --readout-every 3");
  INFO(resumed.output);
  REQUIRE(resumed.exit_code == 0);
  CHECK(loss_and_norm(stopped) == loss_and_norm(each));

  // the spike of the diverging test above, checkpoints every 8 steps, readouts every 3:
  // the diverged step is found up to 2 steps late, and reported as at once
  const std::string spike_opts = " --steps 40 --checkpoint-every 8 --lr 1 --min-lr 1 --warmup-steps 5 --grad-clip 0";
  const std::string now = tmp.path() + "/now", late = tmp.path() + "/late";
  auto d1 = run(base_args(now) + spike_opts + " --readout-every 1");
  auto d3 = run(base_args(late) + spike_opts + " --readout-every 3");
  INFO(d1.output << d3.output);
  CHECK(d1.exit_code == 1);
  CHECK(d3.exit_code == 1);
  REQUIRE_FALSE(diverged_line(d1.output, now).empty());
  CHECK(diverged_line(d3.output, late) == diverged_line(d1.output, now));
  CHECK(loss_and_norm(late) == loss_and_norm(now));
}

TEST_CASE("train --no-checkpoints: no checkpoint at the end or on a signal, no weight hash, the same losses") {
  // gpu-check's throughput runs at the paper's 1B shape: the final checkpoint alone would
  // be ~30 GB through SHA-256 and fsync, minutes of a 10-minute call
  TempDir tmp;
  const std::string plain = tmp.path() + "/plain", bare = tmp.path() + "/bare", stopped = tmp.path() + "/stopped";
  const std::string opts = " --steps 6 --checkpoint-every 2";
  auto a = run(base_args(plain) + opts);
  INFO(a.output);
  REQUIRE(a.exit_code == 0);
  auto b = run(base_args(bare) + opts + " --no-checkpoints");
  INFO(b.output);
  REQUIRE(b.exit_code == 0);
  CHECK(list_checkpoints(plain).size() == 3);
  CHECK_FALSE(fs::exists(bare + "/checkpoints/step_000000000006"));
  CHECK(list_checkpoints(bare).empty());
  CHECK(train_losses(bare) == train_losses(plain));
  json sa = json::parse(read_file(plain + "/summary.json")), sb = json::parse(read_file(bare + "/summary.json"));
  CHECK(sa["final_val_loss"] == sb["final_val_loss"]);
  CHECK(sa.contains("params_sha256"));
  CHECK_FALSE(sb.contains("params_sha256"));
  CHECK(sb["config"]["no_checkpoints"] == true);

  auto s = run(base_args(stopped) + opts + " --no-checkpoints --debug-kill-at-step 3 --debug-kill-phase sigterm");
  INFO(s.output);
  CHECK(s.exit_code == 128 + SIGTERM);
  CHECK(s.output.find("SIGTERM received: stopped after step 3 of 6, no checkpoint (--no-checkpoints); a rerun starts "
                      "over") != std::string::npos);
  CHECK(list_checkpoints(stopped).empty());
  // into a directory that holds an earlier run's checkpoints: it resumes from them, writes
  // none, and its stop line names the one a rerun resumes from
  auto earlier = run(base_args(stopped) + opts + " --debug-kill-at-step 3 --debug-kill-phase sigterm");
  INFO(earlier.output);
  REQUIRE(earlier.exit_code == 128 + SIGTERM);
  REQUIRE(list_checkpoints(stopped).size() == 2);  // steps 2 and 3
  auto again = run(base_args(stopped) + opts + " --no-checkpoints --debug-kill-at-step 5 --debug-kill-phase sigterm");
  INFO(again.output);
  CHECK(again.exit_code == 128 + SIGTERM);
  CHECK_THAT(again.output, Catch::Contains("(step 3, ") &&
                               Catch::Contains("stopped after step 5 of 6, no checkpoint (--no-checkpoints); a rerun "
                                               "resumes from " + stopped + "/checkpoints/step_000000000003"));
  CHECK(list_checkpoints(stopped).size() == 2);

  auto refused = run(base_args(tmp.path() + "/r") + opts + " --no-checkpoints --resume");
  INFO(refused.output);
  CHECK(refused.exit_code != 0);
  CHECK(refused.output.find("--resume and --no-checkpoints") != std::string::npos);
}
