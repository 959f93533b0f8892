// The launch environment (train/launch_env.h) in every case a cluster gives it, faked:
// nothing, torchrun (old and agent-store), an sbatch script, an srun step on one or
// several nodes, one GPU per task, and the malformed ones, which fail before any wait.
#include "catch.h"

#include <map>
#include <set>
#include <string>

#include "train/launch_env.h"
#include "util/error.h"

using namespace shapelaw;

namespace {

LaunchEnv launch(const std::map<std::string, std::string>& vars) {
  return launch_env_from([&](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST_CASE("launch environment: no launcher is one process on loopback") {
  const LaunchEnv e = launch({});
  CHECK(e.launcher == "none");
  CHECK(e.world == 1);
  CHECK(e.rank == 0);
  CHECK(e.master_addr == "127.0.0.1");
  CHECK(e.master_port == 29500);
  CHECK(e.notes.empty());
}

TEST_CASE("launch environment: torchrun's variables, and its agent store (torch >= 2.4)") {
  LaunchEnv e = launch({{"WORLD_SIZE", "4"}, {"RANK", "3"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.2"},
                        {"MASTER_PORT", "41234"}});
  CHECK(e.launcher == "torchrun");
  CHECK(e.world == 4);
  CHECK(e.rank == 3);
  CHECK(e.local_rank == 1);
  CHECK(e.master_addr == "10.0.0.2");
  CHECK(e.master_port == 41234);
  CHECK_FALSE(e.agent_store);
  e = launch({{"WORLD_SIZE", "2"}, {"RANK", "0"}, {"LOCAL_RANK", "0"}, {"MASTER_PORT", "5000"},
              {"TORCHELASTIC_USE_AGENT_STORE", "True"}, {"TORCHELASTIC_RESTART_COUNT", "2"}});
  CHECK(e.agent_store);
  CHECK(e.store_prefix == "/worker/attempt_2");
  // torchrun inside an srun step: torchrun's ranks win, and it is said
  e = launch({{"WORLD_SIZE", "2"}, {"RANK", "1"}, {"LOCAL_RANK", "1"}, {"SLURM_STEP_ID", "0"}, {"SLURM_PROCID", "0"},
              {"SLURM_STEP_NUM_TASKS", "1"}});
  CHECK(e.launcher == "torchrun");
  CHECK(e.rank == 1);
  REQUIRE(e.notes.size() == 1);
  CHECK_THAT(e.notes[0], Catch::Contains("taken over Slurm's"));
}

TEST_CASE("launch environment: an sbatch script's SLURM_NTASKS is not a world (one process, said once)") {
  // the reproduction: a plain train in a 4-task allocation waited 600 s as rank 0 of 4
  LaunchEnv e = launch({{"SLURM_JOB_ID", "7"}, {"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}, {"SLURM_LOCALID", "0"}});
  CHECK(e.launcher == "none");
  CHECK(e.world == 1);
  REQUIRE(e.notes.size() == 1);
  CHECK_THAT(e.notes[0], Catch::Contains("SLURM_NTASKS=4 outside an srun step"));
  // the batch step's own id (SLURM_BATCH_SCRIPT, 0xfffffffb), where a Slurm exports it
  e = launch({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "4294967291"}, {"SLURM_NTASKS", "4"}, {"SLURM_PROCID", "0"}});
  CHECK(e.launcher == "none");
  CHECK(e.world == 1);
  REQUIRE(e.notes.size() == 1);
  CHECK_THAT(e.notes[0], Catch::Contains("is not an srun step"));
  // a one-task srun step is one process, with nothing to say
  e = launch({{"SLURM_JOB_ID", "7"}, {"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "1"}, {"SLURM_PROCID", "0"},
              {"SLURM_NTASKS", "4"}});
  CHECK(e.world == 1);
  CHECK(e.notes.empty());
}

TEST_CASE("launch environment: an srun step over several nodes finds rank 0's host and a port of its job") {
  const std::map<std::string, std::string> step{{"SLURM_JOB_ID", "123456"},        {"SLURM_STEP_ID", "0"},
                                                {"SLURM_STEP_NUM_TASKS", "16"},     {"SLURM_NTASKS", "16"},
                                                {"SLURM_PROCID", "13"},             {"SLURM_LOCALID", "5"},
                                                {"SLURM_STEP_NUM_NODES", "2"},      {"SLURM_STEP_NODELIST", "gpu[007-008]"},
                                                {"SLURM_JOB_NODELIST", "gpu[001,007-008]"}};
  LaunchEnv e = launch(step);
  CHECK(e.launcher == "slurm");
  CHECK(e.world == 16);
  CHECK(e.rank == 13);
  CHECK(e.local_rank == 5);
  CHECK(e.master_addr == "gpu007");
  CHECK(e.master_port == 20000 + (97 * 123456 + 0) % 10000);
  CHECK(e.port_source == "SLURM_JOB_ID and the step id");
  auto given = step;
  given["MASTER_ADDR"] = "head";
  given["MASTER_PORT"] = "29999";
  e = launch(given);
  CHECK(e.master_addr == "head");
  CHECK(e.master_port == 29999);
  // one node: loopback
  auto one = step;
  one["SLURM_STEP_NUM_NODES"] = "1";
  one["SLURM_STEP_NODELIST"] = "gpu007";
  one["SLURM_PROCID"] = "3";
  one["SLURM_LOCALID"] = "3";
  CHECK(launch(one).master_addr == "127.0.0.1");
  // the old spelling of the step id
  auto old = step;
  old.erase("SLURM_STEP_ID");
  old["SLURM_STEPID"] = "2";
  CHECK(launch(old).launcher == "slurm");
}

TEST_CASE("launch environment: the srun steps of one job each rendezvous on a port of their own") {
  // make -j with LAUNCH=srun starts several multi-GPU steps of one job on one node at once
  std::set<int> ports;
  for (long long step = 0; step < 10000; ++step) {
    const int port = slurm_step_port(123456, step);
    CHECK((port >= 20000 && port < 30000));
    ports.insert(port);
  }
  CHECK(ports.size() == 10000);
  // neighbouring jobs' first steps stay apart; ids past 32 bits and negative ones stay in range
  CHECK(slurm_step_port(123457, 0) == slurm_step_port(123456, 0) + 97);
  CHECK(slurm_step_port(123456789012LL, 3) == 20000 + int((123456789012LL % 10000 * 97 + 3) % 10000));
  CHECK(slurm_step_port(-1, 0) == 20000 + 9999 * 97 % 10000);
  // through the environment: step 1 of the same job is not step 0's port
  const std::map<std::string, std::string> step0{{"SLURM_JOB_ID", "7"},         {"SLURM_STEP_ID", "0"},
                                                 {"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_PROCID", "1"},
                                                 {"SLURM_LOCALID", "1"}};
  auto step1 = step0;
  step1["SLURM_STEP_ID"] = "1";
  CHECK(launch(step0).master_port == 20000 + 7 * 97);
  CHECK(launch(step1).master_port == 20000 + 7 * 97 + 1);
}

TEST_CASE("launch environment: Slurm node lists to their first host") {
  CHECK(first_slurm_host("gpu007") == "gpu007");
  CHECK(first_slurm_host("a,b") == "a");
  CHECK(first_slurm_host("gpu[007-010,12],login1") == "gpu007");
  CHECK(first_slurm_host("gpu[12,7-10]") == "gpu12");
  CHECK(first_slurm_host("rack[1-2]-n[01-04]") == "rack1-n01");
  CHECK_THROWS_WITH(first_slurm_host("gpu[007-010"), Catch::Contains("unbalanced '['"));
}

TEST_CASE("launch environment: the CUDA device of a rank, with one GPU per task under srun") {
  LaunchEnv torchrun = launch({{"WORLD_SIZE", "8"}, {"RANK", "3"}, {"LOCAL_RANK", "3"}});
  CHECK(cuda_device_index(torchrun, 8) == 3);
  CHECK_THROWS_WITH(cuda_device_index(torchrun, 1), Catch::Contains("local rank 3 (torchrun) but 1 visible GPU(s)"));
  LaunchEnv srun = launch({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "8"}, {"SLURM_PROCID", "3"},
                           {"SLURM_LOCALID", "3"}});
  CHECK(cuda_device_index(srun, 8) == 3);
  CHECK(cuda_device_index(srun, 1) == 0);  // --gpus-per-task=1: CUDA_VISIBLE_DEVICES is this task's GPU
  CHECK_THROWS_WITH(cuda_device_index(srun, 2), Catch::Contains("srun --gpus-per-task=1"));
}

TEST_CASE("launch environment: malformed or inconsistent variables fail at once, naming them") {
  CHECK_THROWS_WITH(launch({{"RANK", "1"}}), Catch::Contains("without WORLD_SIZE"));
  CHECK_THROWS_WITH(launch({{"WORLD_SIZE", "4"}, {"RANK", "4"}}), Catch::Contains("rank 4, local rank 0 of 4"));
  CHECK_THROWS_WITH(launch({{"WORLD_SIZE", "two"}}), Catch::Contains("WORLD_SIZE='two' is not an integer"));
  CHECK_THROWS_WITH(launch({{"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}), Catch::Contains("not a TCP port"));
  CHECK_THROWS_WITH(launch({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}}),
                    Catch::Contains("without SLURM_PROCID"));
  CHECK_THROWS_WITH(launch({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_PROCID", "0"},
                            {"SLURM_STEP_NUM_NODES", "2"}}),
                    Catch::Contains("set MASTER_ADDR"));
  CHECK_THROWS_WITH(launch({{"SLURM_STEP_ID", "0"}, {"SLURM_STEP_NUM_TASKS", "4"}, {"SLURM_PROCID", "x"}}),
                    Catch::Contains("SLURM_PROCID='x' is not an integer"));
}
