#include "train/launch_env.h"

#include <cstdlib>

#include "util/error.h"

namespace shapelaw {
namespace {

struct Reader {
  const GetenvFn& getenv;
  const char* raw(const char* name) const {
    const char* v = getenv(name);
    return v && *v ? v : nullptr;
  }
  bool has(const char* name) const { return raw(name) != nullptr; }
  std::string str(const char* name, const std::string& fallback = "") const {
    const char* v = raw(name);
    return v ? v : fallback;
  }
  long long integer(const char* name, long long fallback) const {
    const char* v = raw(name);
    if (!v) return fallback;
    char* end = nullptr;
    const long long n = std::strtoll(v, &end, 10);
    if (*end != '\0' || end == v)
      throw Error(std::string("environment variable ") + name + "='" + v + "' is not an integer");
    return n;
  }
};

// Slurm's special step ids (batch script, extern, interactive, ...) are the top of the
// 32-bit range; an srun step is numbered from 0.
constexpr long long slurm_first_special_step = 0xfffffff0LL;

void check_rank(const LaunchEnv& e, const std::string& names) {
  if (e.world < 1 || e.rank < 0 || e.rank >= e.world || e.local_rank < 0 || e.local_rank > e.rank)
    throw Error("launch environment (" + names + "): rank " + std::to_string(e.rank) + ", local rank " +
                std::to_string(e.local_rank) + " of " + std::to_string(e.world) + " is not a rank of that world");
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  std::string host;
  for (size_t i = 0; i < nodelist.size(); ++i) {
    const char c = nodelist[i];
    if (c == ',') break;
    if (c != '[') {
      host += c;
      continue;
    }
    const size_t close = nodelist.find(']', i);
    if (close == std::string::npos) throw Error("Slurm node list '" + nodelist + "': unbalanced '['");
    const std::string inside = nodelist.substr(i + 1, close - i - 1);
    host += inside.substr(0, inside.find_first_of(",-"));  // zero padding kept as written
    i = close;
  }
  if (host.empty()) throw Error("Slurm node list '" + nodelist + "': no host in it");
  return host;
}

int slurm_step_port(long long job_id, long long step_id) {
  constexpr long long ports = 10000;
  const auto mod = [](long long v) { return (v % ports + ports) % ports; };
  // 97 is prime to 10000: consecutive steps of one job step through all 10000 ports before
  // one repeats, and the job's own term keeps neighbouring jobs' first steps 97 apart
  return int(20000 + mod(mod(job_id) * 97 + mod(step_id)));
}

LaunchEnv launch_env_from(const GetenvFn& getenv) {
  const Reader env{getenv};
  LaunchEnv e;
  if (env.has("WORLD_SIZE") || env.has("RANK") || env.has("LOCAL_RANK")) {
    if (!env.has("WORLD_SIZE"))
      throw Error("launch environment: RANK or LOCAL_RANK is set without WORLD_SIZE (torchrun sets all three)");
    e.launcher = "torchrun";
    e.world = int(env.integer("WORLD_SIZE", 1));
    e.rank = int(env.integer("RANK", 0));
    e.local_rank = int(env.integer("LOCAL_RANK", 0));
    e.master_addr = env.str("MASTER_ADDR", e.master_addr);
    if (env.has("MASTER_PORT")) {
      e.master_port = int(env.integer("MASTER_PORT", 0));
      e.port_source = "MASTER_PORT";
    }
    const std::string agent = env.str("TORCHELASTIC_USE_AGENT_STORE");
    e.agent_store = agent == "True" || agent == "true" || agent == "1";
    if (e.agent_store) e.store_prefix = "/worker/attempt_" + env.str("TORCHELASTIC_RESTART_COUNT", "0");
    check_rank(e, "WORLD_SIZE, RANK, LOCAL_RANK");
    if (env.has("SLURM_PROCID") && env.has("SLURM_STEP_ID"))
      e.notes.push_back("torchrun's RANK/WORLD_SIZE taken over Slurm's SLURM_PROCID/SLURM_STEP_NUM_TASKS");
  } else if (env.has("SLURM_STEP_ID") || env.has("SLURM_STEPID")) {
    const long long step = env.integer(env.has("SLURM_STEP_ID") ? "SLURM_STEP_ID" : "SLURM_STEPID", 0);
    const long long tasks = env.integer("SLURM_STEP_NUM_TASKS", env.integer("SLURM_NTASKS", 1));
    if (step < 0 || step >= slurm_first_special_step || tasks <= 1) {
      if (tasks > 1)
        e.notes.push_back("Slurm step " + std::to_string(step) + " is not an srun step: SLURM_NTASKS=" +
                          std::to_string(tasks) + " ignored, one process (launch ranks with srun or torchrun)");
    } else {
      e.launcher = "slurm";
      e.world = int(tasks);
      if (!env.has("SLURM_PROCID")) throw Error("launch environment: an srun step of " + std::to_string(tasks) +
                                                " tasks without SLURM_PROCID");
      e.rank = int(env.integer("SLURM_PROCID", 0));
      e.local_rank = int(env.integer("SLURM_LOCALID", 0));
      if (env.has("MASTER_ADDR")) {
        e.master_addr = env.str("MASTER_ADDR");
      } else {
        const std::string nodes = env.str("SLURM_STEP_NODELIST", env.str("SLURM_JOB_NODELIST", env.str("SLURM_NODELIST")));
        const long long nnodes = env.integer("SLURM_STEP_NUM_NODES", env.integer("SLURM_NNODES", 1));
        if (nnodes > 1 && nodes.empty())
          throw Error("launch environment: an srun step over " + std::to_string(nnodes) +
                      " nodes without SLURM_STEP_NODELIST: set MASTER_ADDR to rank 0's host");
        if (!nodes.empty()) e.master_addr = nnodes > 1 ? first_slurm_host(nodes) : e.master_addr;
      }
      if (env.has("MASTER_PORT")) {
        e.master_port = int(env.integer("MASTER_PORT", 0));
        e.port_source = "MASTER_PORT";
      } else if (env.has("SLURM_JOB_ID")) {
        e.master_port = slurm_step_port(env.integer("SLURM_JOB_ID", 0), step);
        e.port_source = "SLURM_JOB_ID and the step id";
      }
      check_rank(e, "SLURM_PROCID, SLURM_LOCALID, SLURM_STEP_NUM_TASKS");
    }
  } else if (env.integer("SLURM_NTASKS", 1) > 1) {
    e.notes.push_back("SLURM_NTASKS=" + env.str("SLURM_NTASKS") +
                      " outside an srun step (no SLURM_STEP_ID): ignored, one process (launch ranks with srun or torchrun)");
  }
  if (e.master_port < 1 || e.master_port > 65535)
    throw Error("launch environment: MASTER_PORT=" + std::to_string(e.master_port) + " is not a TCP port");
  return e;
}

LaunchEnv launch_env() {
  return launch_env_from([](const char* name) { return std::getenv(name); });
}

int cuda_device_index(const LaunchEnv& env, int visible) {
  if (env.local_rank < visible) return env.local_rank;
  if (env.launcher == "slurm" && visible == 1) return 0;  // srun --gpus-per-task=1: the task's own GPU
  throw Error("--device cuda: local rank " + std::to_string(env.local_rank) + " (" + env.launcher + ") but " +
              std::to_string(visible) +
              " visible GPU(s): run one rank per GPU (torchrun --nproc_per_node, or srun --gpus-per-task=1)");
}

}  // namespace shapelaw
