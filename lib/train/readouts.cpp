#include "train/readouts.h"

#include "train/divergence.h"
#include "util/progress.h"

namespace shapelaw {

using Clock = std::chrono::steady_clock;

Readouts::Readouts(const Settings& settings, RunMetrics& metrics, std::vector<double>& losses, Log log)
    : s_(settings), metrics_(metrics), losses_(losses), log_(std::move(log)) {
  window_start_ = loop_start_ = Clock::now();
}

StepRecord& Readouts::add(const StepRecord& rec, torch::Tensor loss_sum, torch::Tensor grad_norm) {
  pending_.push_back(Pending{rec, std::move(loss_sum), std::move(grad_norm)});
  return pending_.back().rec;
}

void Readouts::restart_window() { window_start_ = Clock::now(); }

std::optional<Readouts::Divergence> Readouts::check() {
  if (read_ == pending_.size()) return std::nullopt;
  std::vector<torch::Tensor> values;
  for (size_t i = read_; i < pending_.size(); ++i)
    values.insert(values.end(), {pending_[i].loss_sum.to(torch::kFloat64), pending_[i].grad_norm.to(torch::kFloat64)});
  const torch::Tensor host = torch::stack(values).cpu();  // the one wait
  const double* v = host.data_ptr<double>();
  for (; read_ < pending_.size(); ++read_, v += 2) {
    StepRecord& rec = pending_[read_].rec;
    rec.loss = v[0] / double(s_.accum), rec.grad_norm = v[1];
    const auto guard = DivergenceCheck::for_run(losses_.empty() ? rec.loss : losses_.front(), s_.vocab_size,
                                                s_.divergence_factor);
    if (std::string why = guard.check(rec.loss, rec.grad_norm); !why.empty()) {
      const int64_t step_before = rec.step - 1;
      write_read();
      return Divergence{std::move(why), step_before};
    }
    losses_.push_back(rec.loss);
  }
  return std::nullopt;
}

std::optional<Readouts::Divergence> Readouts::read_out() {
  auto diverged = check();
  if (!diverged) write_read();
  return diverged;
}

void Readouts::write_read() {
  const double window_s = seconds_since(window_start_);
  for (size_t i = 0; i < read_; ++i) {
    StepRecord& rec = pending_[i].rec;
    if (!s_.step_waits) rec.step_ms = 1000.0 * window_s / double(pending_.size()), rec.optimizer_ms = -1;
    rec.tokens_per_s = double(s_.batch_tokens) / (rec.step_ms / 1000.0);
    rec.mfu = s_.flops_per_token * rec.tokens_per_s / (s_.peak_flops * s_.world);
    metrics_.train(rec);
    if (s_.log_every > 0 && (rec.step % s_.log_every == 0 || rec.step == s_.total_steps) && log_)
      log_("step " + std::to_string(rec.step) + "/" + std::to_string(s_.total_steps) + " loss " +
           fmt("%.4f", rec.loss) + " lr " + fmt("%.3g", rec.lr) + " gnorm " + fmt("%.3g", rec.grad_norm) + " | " +
           fmt("%.0f", rec.tokens_per_s) + " tok/s, MFU " + fmt("%.1f%%", 100 * rec.mfu) + ", data wait " +
           fmt("%.2f", rec.data_wait_ms) + " ms, ETA " +
           format_duration(seconds_since(loop_start_) / double(rec.step - s_.first_step) *
                           double(s_.total_steps - rec.step)));
  }
  pending_.erase(pending_.begin(), pending_.begin() + long(read_));
  read_ = 0;
}

}  // namespace shapelaw
