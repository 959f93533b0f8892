#pragma once
// Who launched this process, and so which rank of how many it is and where rank 0's
// store listens: torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), an
// srun step of Slurm (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID,
// SLURM_STEP_NODELIST), or nobody (one process). Torch-free and read through a getenv
// function, so every case is tested with a faked environment (tests/train).
//
// Slurm's variables count only inside an srun step: an sbatch script sees SLURM_NTASKS
// and SLURM_PROCID=0 of the whole allocation, and a plain `train` there (paper.mk's
// one-GPU rows) would otherwise wait for N-1 ranks that never come.
#include <functional>
#include <string>
#include <vector>

namespace shapelaw {

struct LaunchEnv {
  std::string launcher = "none";  // none | torchrun | slurm
  int rank = 0, world = 1, local_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string port_source = "default";  // MASTER_PORT | SLURM_JOB_ID and the step id | default
  // torchrun of torch >= 2.4 serves the store from its agent (TORCHELASTIC_USE_AGENT_STORE):
  // every rank, rank 0 included, is a client of it, under this key prefix.
  bool agent_store = false;
  std::string store_prefix;
  std::vector<std::string> notes;  // what was ignored and why, for stderr
};

using GetenvFn = std::function<const char*(const char*)>;

// Throws Error naming the variable when a value is malformed or inconsistent (a rank
// outside the world, a torchrun rank without WORLD_SIZE), so a launch that cannot
// complete fails before it waits.
LaunchEnv launch_env_from(const GetenvFn& getenv);
LaunchEnv launch_env();  // of this process

// The first host of a Slurm node list: "gpu[007-010,12],login1" -> "gpu007",
// "rack[1-2]-n[01-04]" -> "rack1-n01", "a,b" -> "a". Throws Error on an unbalanced '['.
std::string first_slurm_host(const std::string& nodelist);

// The rendezvous port of an srun step when MASTER_PORT is not set:
// 20000 + (97 * job id + step id) mod 10000. Each step of a job has its own, since
// `make -f pipelines/paper.mk -j LAUNCH=srun...` starts several multi-GPU steps of one job
// on one node at once; with one port per job the second step's rank 0 could not listen
// and its other ranks would join the first step's store.
int slurm_step_port(long long job_id, long long step_id);

// The CUDA device index of this rank among `visible` GPUs: its local rank, or 0 under
// Slurm when the task sees one GPU (srun --gpus-per-task=1 gives each task its own).
// Throws Error saying what to change when neither fits.
int cuda_device_index(const LaunchEnv& env, int visible);

}  // namespace shapelaw
