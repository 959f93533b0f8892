#include "train/run_plan.h"

namespace shapelaw {

PlanOptions plan_options(const TrainConfig& c, int world) {
  PlanOptions o;
  o.model = c.model;
  o.micro_batch = c.micro_batch;
  o.batch_tokens = c.batch_tokens;
  o.steps = c.total_steps();
  o.world = world;
  o.zero = c.zero;
  o.bucket_bytes = int64_t(c.bucket_mb * double(1 << 20));
  o.activation_checkpointing = c.activation_checkpointing;
  o.probe_steps = int64_t(c.probe_steps.size());
  o.cuda = c.device == "cuda";
  o.bf16 = c.precision == "bf16" || (c.precision == "auto" && o.cuda);
  return o;
}

nlohmann::json memory_json(const Plan& p, const MeasuredMemory& m) {
  nlohmann::json j = {{"plan",
                       {{"weights", p.weights},
                        {"gradients", p.gradients},
                        {"optimizer_moments", p.moments},
                        {"activations", p.activations_used},
                        {"peak", p.peak},
                        {"evaluation_peak", p.evaluation_peak}}},
                      {"measured",
                       {{"weights", m.weights},
                        {"gradients", m.gradients},
                        {"optimizer_state", m.optimizer_state},
                        {"peak", m.peak},
                        {"activations", m.peak - m.weights - m.gradients - m.optimizer_state},
                        {"evaluation_peak", m.evaluation_peak}}}};
  // CUDA only (the CPU records stay as they were): what the device had to hold against
  // what the plan said it would need
  if (m.peak_reserved >= 0) {
    j["plan"]["required"] = p.required;
    j["measured"]["peak_reserved"] = m.peak_reserved;
  }
  return j;
}

}  // namespace shapelaw
