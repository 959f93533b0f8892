#pragma once
// Readouts: when the host reads back what the device computed. A step's loss and
// gradient norm stay on the device (0-dim tensors) until a readout reads those of every
// step since the last one in one wait, checks them for divergence in step order and
// writes their metrics rows (and the progress line every --log-every steps). On the CPU
// every step is a readout; on a GPU the host queues the next steps meanwhile, so a step
// costs no host sync. The trainer makes probe, validation, checkpoint, signal and the
// last step readouts, so nothing is saved or probed after a step that was not read.
//
// Timing: where every step waits for the device (`step_waits`: the CPU, or a readout
// every step) each step keeps its own step_ms and optimizer_ms; otherwise a window's
// time (from restart_window() to the readout) is shared equally by its steps and
// optimizer_ms is not measured (-1, written null).
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "train/metrics.h"

namespace shapelaw {

class Readouts {
 public:
  struct Settings {
    int64_t total_steps = 0, batch_tokens = 0, accum = 1, log_every = 0, vocab_size = 0;
    int64_t first_step = 0;  // this session's first step: the ETA's pace
    double divergence_factor = 0, flops_per_token = 0, peak_flops = 1;
    int world = 1;
    bool step_waits = true;
  };
  // A diverged step: `why` as DivergenceCheck says it; the weights it was computed from
  // are those after step_before.
  struct Divergence {
    std::string why;
    int64_t step_before = 0;
  };
  using Log = std::function<void(const std::string&)>;

  // losses: the run's train loss of every step read so far (resumed ones included); each
  // step read is appended, and the first one sets the divergence limit.
  Readouts(const Settings& settings, RunMetrics& metrics, std::vector<double>& losses, Log log);

  // Queues a step: its record (timings may still be filled in through the reference,
  // valid until the next add) and its device values: loss_sum, the sum of its
  // micro-batches' losses, and the global gradient norm.
  StepRecord& add(const StepRecord& rec, torch::Tensor loss_sum, torch::Tensor grad_norm);

  // Reads every queued step's values in one wait and checks them in step order. On a
  // divergence the steps before it are written out, as a readout every step would have,
  // and the divergence is returned (nothing after it is read).
  [[nodiscard]] std::optional<Divergence> check();
  // check(), then the rows of every step read go out and leave the queue.
  [[nodiscard]] std::optional<Divergence> read_out();

  size_t queued() const { return pending_.size(); }
  // The next window's clock starts now (after validation and checkpoints, which it leaves out).
  void restart_window();

 private:
  struct Pending {
    StepRecord rec;
    torch::Tensor loss_sum, grad_norm;  // on the device until read
  };
  void write_read();

  Settings s_;
  RunMetrics& metrics_;
  std::vector<double>& losses_;
  Log log_;
  std::vector<Pending> pending_;
  size_t read_ = 0;  // the read steps are always a prefix of pending_
  std::chrono::steady_clock::time_point window_start_, loop_start_;
};

}  // namespace shapelaw
