// train/readouts.h on its own: steps queued with their values on the "device", read in
// one batch in step order, the rows written then; a divergence found at a late readout
// writes only the rows before it and names the step whose weights diverged.
#include "catch.h"

#include <chrono>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "test_support.h"
#include "train/readouts.h"

using namespace shapelaw;
using json = nlohmann::json;

namespace {

std::vector<json> train_rows(const std::string& dir) {
  std::vector<json> rows;
  std::istringstream in(test::read_text(dir + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) rows.push_back(json::parse(line));
  return rows;
}

Readouts::Settings settings(bool step_waits) {
  Readouts::Settings s;
  s.total_steps = 10, s.batch_tokens = 64, s.accum = 2, s.vocab_size = 100, s.divergence_factor = 3;
  s.flops_per_token = 10, s.peak_flops = 1e6, s.step_waits = step_waits;
  return s;
}

StepRecord record(int64_t step, double step_ms) {
  StepRecord r;
  r.step = step, r.tokens = 64 * step, r.lr = 0.01, r.step_ms = step_ms, r.optimizer_ms = 1;
  return r;
}

torch::Tensor scalar(double v, torch::Dtype dtype = torch::kFloat32) { return torch::full({}, v, torch::dtype(dtype)); }

}  // namespace

TEST_CASE("Readouts: queued steps are read in one batch and written in step order with their own times") {
  test::TempDir dir;
  RunMetrics metrics(dir.path(), true, false, -1);
  std::vector<double> losses;
  Readouts r(settings(/*step_waits=*/true), metrics, losses, nullptr);
  for (int64_t s = 1; s <= 3; ++s) r.add(record(s, 100.0 * double(s)), scalar(2.0 * double(s)), scalar(0.5, torch::kFloat64));
  REQUIRE(r.queued() == 3);
  CHECK(train_rows(dir.path()).empty());  // nothing is written before a readout
  REQUIRE_FALSE(r.read_out());
  CHECK(r.queued() == 0);
  const auto rows = train_rows(dir.path());
  REQUIRE(rows.size() == 3);
  for (int64_t s = 1; s <= 3; ++s) {
    const json& row = rows[size_t(s - 1)];
    CHECK(row["step"] == s);
    CHECK(row["loss"].get<double>() == Approx(double(s)));  // the sum over accum = 2 micro-batches, halved
    CHECK(row["grad_norm"].get<double>() == 0.5);
    CHECK(row["step_ms"].get<double>() == 100.0 * double(s));  // each step's own
    CHECK(row["optimizer_ms"].get<double>() == 1.0);
    CHECK(row["tokens_per_s"].get<double>() == Approx(64.0 / (0.1 * double(s))));
  }
  CHECK(losses == std::vector<double>{1, 2, 3});
}

TEST_CASE("Readouts: where steps do not wait, a window's time is shared and the optimizer's is not measured") {
  test::TempDir dir;
  RunMetrics metrics(dir.path(), true, false, -1);
  std::vector<double> losses;
  Readouts r(settings(/*step_waits=*/false), metrics, losses, nullptr);
  r.restart_window();
  for (int64_t s = 1; s <= 4; ++s) r.add(record(s, 1e9), scalar(4.0), scalar(1.0, torch::kFloat64));
  std::this_thread::sleep_for(std::chrono::milliseconds(40));  // the window lasts at least 40 ms
  REQUIRE_FALSE(r.read_out());
  const auto rows = train_rows(dir.path());
  REQUIRE(rows.size() == 4);
  for (const auto& row : rows) {
    CHECK(row["step_ms"].get<double>() == rows[0]["step_ms"].get<double>());
    // the window's share (at least 40 / 4 ms), not the record's
    CHECK(row["step_ms"].get<double>() >= 10.0);
    CHECK(row["step_ms"].get<double>() < 1e9);
    CHECK(row["optimizer_ms"].is_null());
  }
}

TEST_CASE("Readouts: check() reads without writing, and a late divergence writes the rows before it and names its step") {
  test::TempDir dir;
  RunMetrics metrics(dir.path(), true, false, -1);
  std::vector<double> losses;
  Readouts r(settings(true), metrics, losses, nullptr);
  r.add(record(1, 1), scalar(10.0), scalar(1.0, torch::kFloat64));
  REQUIRE_FALSE(r.check());  // a probe step: read, not yet written
  CHECK(losses == std::vector<double>{5});
  CHECK(train_rows(dir.path()).empty());
  r.add(record(2, 1), scalar(9.0), scalar(1.0, torch::kFloat64));
  // step 3's loss 50 is above 3 x max(first loss 5, ln 100): diverged; step 4 is never read
  r.add(record(3, 1), scalar(100.0), scalar(1.0, torch::kFloat64));
  r.add(record(4, 1), scalar(std::nan("")), scalar(1.0, torch::kFloat64));
  const auto d = r.read_out();
  REQUIRE(d);
  CHECK(d->step_before == 2);
  CHECK_THAT(d->why, Catch::Contains("above the divergence limit"));
  const auto rows = train_rows(dir.path());
  REQUIRE(rows.size() == 2);
  CHECK(rows[1]["step"] == 2);
  CHECK(losses == std::vector<double>{5, 4.5});

  // a non-finite gradient norm diverges too, at once
  test::TempDir dir2;
  RunMetrics metrics2(dir2.path(), true, false, -1);
  std::vector<double> losses2;
  Readouts r2(settings(true), metrics2, losses2, nullptr);
  r2.add(record(1, 1), scalar(10.0), scalar(std::nan(""), torch::kFloat64));
  const auto d2 = r2.read_out();
  REQUIRE(d2);
  CHECK(d2->step_before == 0);
  CHECK(train_rows(dir2.path()).empty());
}
