#include "train/distributed.h"

#include <cstdlib>

#include "util/error.h"

namespace shapelaw {
namespace {

int env_int(const char* a, const char* b, int fallback) {
  for (const char* name : {a, b}) {
    if (!name) continue;
    if (const char* v = std::getenv(name)) {
      try {
        return std::stoi(v);
      } catch (...) {
        throw Error(std::string("environment variable ") + name + "='" + v + "' is not an integer");
      }
    }
  }
  return fallback;
}

}  // namespace

bool Distributed::available() { return false; }

Distributed Distributed::from_env(const std::string& device) {
  (void)device;
  Distributed d;
  d.world = env_int("WORLD_SIZE", "SLURM_NTASKS", 1);
  d.rank = env_int("RANK", "SLURM_PROCID", 0);
  d.local_rank = env_int("LOCAL_RANK", "SLURM_LOCALID", 0);
  if (d.world < 1 || d.rank < 0 || d.rank >= d.world)
    throw Error("invalid RANK=" + std::to_string(d.rank) + " / WORLD_SIZE=" + std::to_string(d.world));
  if (d.world > 1 && !available())
    throw Error("WORLD_SIZE=" + std::to_string(d.world) +
                ": this build has no c10d Gloo/NCCL process group (Debian's libtorch-dev ships "
                "ProcessGroupGloo.hpp but not the gloo headers it includes; install libgloo-dev and rebuild)");
  return d;
}

void Distributed::broadcast_parameters(const std::vector<torch::Tensor>& params) const {
  (void)params;
}

void Distributed::average_gradients(const std::vector<torch::Tensor>& params, torch::Tensor& loss_sum) const {
  (void)params;
  (void)loss_sum;
}

}  // namespace shapelaw
