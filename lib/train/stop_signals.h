#pragma once
// SIGTERM (Slurm's preemption and time limit, torchrun's shutdown), SIGINT (Ctrl-C) and
// SIGUSR1 (sbatch --signal=USR1@SECONDS) ask a run to stop: the handler only records the
// signal, the training loop checkpoints at the next step boundary and exits 128 + signal.
// A second signal of the same kind kills at once (the handler is one-shot).
namespace shapelaw {

class StopSignals {
 public:
  StopSignals();   // installs the handlers (SA_RESTART: reads in flight are not interrupted)
  ~StopSignals();  // restores the previous ones
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int received() const;  // the first signal received, 0 if none
  static const char* name(int signal);  // "SIGTERM"
};

}  // namespace shapelaw
