#include "train/distributed.h"

#include <chrono>
#include <cstdlib>

#include "compat/torch_compat.h"
#include "train/flat_params.h"
#include "util/error.h"
#include "util/sha256.h"

// Gloo process groups need the gloo headers that ProcessGroupGloo.hpp includes: Debian's
// libtorch-dev lacks them (package libgloo-dev provides them); pip LibTorch 2.x builds
// define USE_C10D_GLOO themselves where they ship them.
// Define SHAPELAW_NO_GLOO to build without it even where the headers exist.
#if defined(__has_include) && !defined(SHAPELAW_NO_GLOO)
#if __has_include(<gloo/algorithm.h>) && __has_include(<torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>)
#define SHAPELAW_HAVE_GLOO 1
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#endif
// NCCL (CUDA builds only): lib/CMakeLists.txt defines SHAPELAW_HAVE_NCCL and
// USE_C10D_NCCL when the LibTorch has CUDA and nccl.h is found (pip: the nvidia-nccl wheel).
#ifdef SHAPELAW_HAVE_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#if defined(SHAPELAW_HAVE_GLOO) || defined(SHAPELAW_HAVE_NCCL)
#define SHAPELAW_HAVE_C10D 1
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#endif

namespace shapelaw {
namespace {

std::string env_str(const char* a, const char* b, const std::string& fallback) {
  for (const char* name : {a, b})
    if (name)
      if (const char* v = std::getenv(name)) return v;
  return fallback;
}

int env_int(const char* a, const char* b, int fallback) {
  std::string v = env_str(a, b, "");
  if (v.empty()) return fallback;
  try {
    return std::stoi(v);
  } catch (...) {
    throw Error(std::string("environment variable ") + a + "='" + v + "' is not an integer");
  }
}

// "nccl" for CUDA runs when built with it, else "gloo"; SHAPELAW_DIST_BACKEND overrides.
std::string choose_backend(const std::string& device) {
  const std::string wanted = env_str("SHAPELAW_DIST_BACKEND", nullptr, "");
  if (!wanted.empty() && wanted != "gloo" && wanted != "nccl")
    throw Error("SHAPELAW_DIST_BACKEND='" + wanted + "': use gloo or nccl");
  const bool cuda = device.rfind("cuda", 0) == 0;
  std::string backend = wanted.empty() ? (cuda && Distributed::has_backend("nccl") ? "nccl" : "gloo") : wanted;
  if (!Distributed::available())
    throw Error("data parallel: this build has no c10d process group (Debian's libtorch-dev ships "
                "ProcessGroupGloo.hpp but not the gloo headers it includes: install libgloo-dev and rebuild)");
  if (!Distributed::has_backend(backend))
    throw Error("data-parallel backend " + backend + " is not in this build (it has: " +
                Distributed::backends() + ")");
  if (backend == "nccl" && !cuda) throw Error("the nccl backend needs --device cuda");
  return backend;
}

#ifdef SHAPELAW_HAVE_C10D
// One of the two process groups; both have the same collective signatures.
struct Group {
  c10::intrusive_ptr<c10d::Store> store;
#ifdef SHAPELAW_HAVE_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#ifdef SHAPELAW_HAVE_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
  // fn(process group) -> its Work, waited for: one collective on whichever group is open.
  // Both groups' collectives have the same signatures.
  template <typename Fn>
  void run(Fn fn) {
#ifdef SHAPELAW_HAVE_NCCL
    if (nccl) return (void)fn(*nccl)->wait();
#endif
#ifdef SHAPELAW_HAVE_GLOO
    fn(*gloo)->wait();
#endif
  }
  void allreduce(std::vector<at::Tensor>& t) {
    run([&](auto& pg) { return pg.allreduce(t); });
  }
  void broadcast(std::vector<at::Tensor>& t) {
    c10d::BroadcastOptions o;
    o.rootRank = 0;
    run([&](auto& pg) { return pg.broadcast(t, o); });
  }
  void allgather(std::vector<std::vector<at::Tensor>>& out, std::vector<at::Tensor>& in) {
    run([&](auto& pg) { return pg.allgather(out, in); });
  }
  void reduce(std::vector<at::Tensor>& t, int root) {
    c10d::ReduceOptions o;
    o.rootRank = root;
    run([&](auto& pg) { return pg.reduce(t, o); });
  }
  // in: world equal pieces, one per rank; out = piece `rank` of the sum of every rank's in.
  // NCCL reduce-scatters: each rank receives only its piece, so ZeRO's reduce-scatter plus
  // all-gather moves as many bytes as plain data parallel's all-reduce. Gloo (LibTorch
  // 1.13 has no reduce-scatter there) all-reduces the whole of in and keeps the piece.
  void reduce_scatter(at::Tensor& out, at::Tensor& in, int rank) {
#ifdef SHAPELAW_HAVE_NCCL
    if (nccl) return (void)nccl->_reduce_scatter_base(out, in)->wait();
#endif
#ifdef SHAPELAW_HAVE_GLOO
    std::vector<at::Tensor> all{in};
    gloo->allreduce(all)->wait();
    out.copy_(in.slice(0, int64_t(rank) * out.numel(), int64_t(rank + 1) * out.numel()));
#endif
    (void)rank;
  }
};

// Gradients are flattened into buckets of about bucket_bytes, each all-reduced in one call.
template <typename Fn>
void for_each_bucket(const std::vector<torch::Tensor>& tensors, int64_t bucket_bytes, Fn fn) {
  std::vector<torch::Tensor> bucket;
  int64_t bytes = 0;
  for (auto& t : tensors) {
    if (!t.defined()) continue;
    bucket.push_back(t);
    bytes += t.numel() * int64_t(t.element_size());
    if (bytes >= bucket_bytes) {
      fn(bucket);
      bucket.clear();
      bytes = 0;
    }
  }
  if (!bucket.empty()) fn(bucket);
}

void flat_collective(const std::vector<torch::Tensor>& bucket, const std::function<void(std::vector<at::Tensor>&)>& op) {
  std::vector<torch::Tensor> flat_parts;
  for (auto& t : bucket) flat_parts.push_back(t.reshape({-1}));
  std::vector<at::Tensor> flat{torch::cat(flat_parts)};
  op(flat);
  int64_t offset = 0;
  for (auto& t : bucket) {
    t.copy_(flat[0].slice(0, offset, offset + t.numel()).view_as(t));
    offset += t.numel();
  }
}
#endif

}  // namespace

bool Distributed::available() { return !backends().empty(); }

bool Distributed::has_backend(const std::string& name) {
#ifdef SHAPELAW_HAVE_GLOO
  if (name == "gloo") return true;
#endif
#ifdef SHAPELAW_HAVE_NCCL
  if (name == "nccl") return true;
#endif
  (void)name;
  return false;
}

std::string Distributed::backends() {
  std::string list;
  for (const char* name : {"gloo", "nccl"})
    if (has_backend(name)) list += (list.empty() ? "" : ", ") + std::string(name);
  return list;
}

const Distributed& Distributed::single() {
  static const Distributed one;
  return one;
}

int Distributed::world_from_env() { return launch_env().world; }

Distributed Distributed::from_env(const std::string& device) {
  Distributed d;
  d.launch = launch_env();  // or a clear error, before any wait
  d.world = d.launch.world;
  d.rank = d.launch.rank;
  d.local_rank = d.launch.local_rank;
  if (d.rank == 0)
    for (const auto& note : d.launch.notes) std::fprintf(stderr, "train: %s\n", note.c_str());
  // One rank needs no process group, unless WORLD_SIZE=1 is set and a backend is named:
  // then the collectives run on one rank, which checks a backend (NCCL on a single-GPU
  // machine) end to end. Both are required, so that a backend exported in the shell does
  // not make every single-process run open a rendezvous port.
  const bool one_rank_check = std::getenv("WORLD_SIZE") && !env_str("SHAPELAW_DIST_BACKEND", nullptr, "").empty();
  if (d.world == 1 && !one_rank_check) return d;
  const std::string backend = choose_backend(device);  // or a clear error
#ifdef SHAPELAW_HAVE_C10D
  const std::string addr = d.launch.master_addr;
  const int port = d.launch.master_port;
  // How long a rank waits for the others, in each wait of the rendezvous and in each
  // collective. The default (NCCL's own; Gloo's is 30 minutes) leaves room for rank 0
  // writing a large checkpoint while the others wait; a test or a shell loop wants to fail fast.
  const int timeout_s = env_int("SHAPELAW_DIST_TIMEOUT", nullptr, 600);
  if (timeout_s < 1) throw Error("SHAPELAW_DIST_TIMEOUT=" + std::to_string(timeout_s) + ": give seconds, at least 1");
  const std::chrono::milliseconds timeout = std::chrono::seconds(timeout_s);
  auto group = std::make_shared<Group>();
  try {
    c10d::TCPStoreOptions opts;
    opts.port = uint16_t(port);
    opts.isServer = d.rank == 0 && !d.launch.agent_store;  // torchrun's agent may serve it already
    opts.numWorkers = size_t(d.world);
    opts.timeout = timeout;
    try {
      group->store = c10::make_intrusive<c10d::TCPStore>(addr, opts);
    } catch (const c10::Error& e) {
      // a LibTorch built without libuv; every rank runs the same build, so all fall back alike
      const bool libuv_missing = std::string(e.what_without_backtrace()).find("without libuv") != std::string::npos;
      if (!libuv_missing || !compat::use_classic_store_backend(opts)) throw;
      group->store = c10::make_intrusive<c10d::TCPStore>(addr, opts);
    }
    // torchrun's agent store holds other keys too; the workers' live under this prefix
    // (what torch.distributed's own rendezvous does with it)
    if (d.launch.agent_store) group->store = c10::make_intrusive<c10d::PrefixStore>(d.launch.store_prefix, group->store);
#ifdef SHAPELAW_HAVE_NCCL
    if (backend == "nccl") {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = timeout;
      group->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(group->store, d.rank, d.world, options);
    }
#endif
#ifdef SHAPELAW_HAVE_GLOO
    if (backend == "gloo") {
      auto options = c10d::ProcessGroupGloo::Options::create(timeout);
      const bool loopback = addr == "127.0.0.1" || addr == "localhost" || addr == "::1";
      options->devices.push_back(loopback ? c10d::ProcessGroupGloo::createDeviceForHostname(addr)
                                          : c10d::ProcessGroupGloo::createDefaultDevice());
      group->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(group->store, d.rank, d.world, options);
    }
#endif
  } catch (const std::exception& e) {
    // c10 errors carry a stack dump in what(): the message alone is what a user needs
    const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
    throw Error("data-parallel rendezvous (" + backend + ") at " + addr + ":" + std::to_string(port) + " (rank " +
                std::to_string(d.rank) + " of " + std::to_string(d.world) + ", launched by " + d.launch.launcher +
                ", port from " + d.launch.port_source + ", SHAPELAW_DIST_TIMEOUT=" +
                std::to_string(timeout_s) + " s) failed: " + (c10_error ? c10_error->what_without_backtrace() : e.what()));
  }
  d.group = group;
  return d;
#else
  (void)backend;
  return d;  // unreachable: choose_backend throws when no process group is built
#endif
}

void Distributed::broadcast_parameters(const std::vector<torch::Tensor>& params) const {
  if (!group) return;
#ifdef SHAPELAW_HAVE_C10D
  torch::NoGradGuard no_grad;
  auto* g = static_cast<Group*>(group.get());
  const std::vector<torch::Tensor> data = detached(params);
  for_each_bucket(data, bucket_bytes, [&](const std::vector<torch::Tensor>& bucket) {
    flat_collective(bucket, [&](std::vector<at::Tensor>& t) { g->broadcast(t); });
  });
#else
  (void)params;
#endif
}

void Distributed::average_gradients(const std::vector<torch::Tensor>& params, torch::Tensor& loss_sum) const {
  if (!group) return;
#ifdef SHAPELAW_HAVE_C10D
  torch::NoGradGuard no_grad;
  auto* g = static_cast<Group*>(group.get());
  std::vector<torch::Tensor> grads;
  for (auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  grads.push_back(loss_sum);
  for_each_bucket(grads, bucket_bytes, [&](const std::vector<torch::Tensor>& bucket) {
    flat_collective(bucket, [&](std::vector<at::Tensor>& t) {
      g->allreduce(t);
      t[0].div_(double(world));
    });
  });
#else
  (void)params;
  (void)loss_sum;
#endif
}

namespace {
#ifdef SHAPELAW_HAVE_C10D
// ZeRO's collectives go over the flattened tensors (train/flat_params.h) in chunks of
// about bucket_bytes: fn(offset, len) for each chunk [offset, offset + len) of a shard.
template <typename Fn>
void for_each_shard_chunk(int64_t shard, int world, int64_t bucket_bytes, Fn fn) {
  const int64_t chunk = std::max<int64_t>(1, bucket_bytes / int64_t(sizeof(float)) / world);
  for (int64_t offset = 0; offset < shard; offset += chunk) fn(offset, std::min(chunk, shard - offset));
}

// Copies between rank r's piece [r*shard + offset, + len) of the flattened tensors and
// buffer (into the buffer, or back); the last rank's piece may run past the end: padding.
void copy_piece(const std::vector<torch::Tensor>& data, int64_t total, int64_t shard, int r, int64_t offset,
                int64_t len, const torch::Tensor& buffer, bool into_buffer) {
  const int64_t begin = std::min(total, int64_t(r) * shard + offset), end = std::min(total, begin + len);
  for_each_flat_piece(data, begin, end, [&](torch::Tensor piece, int64_t at, size_t) {
    auto slot = buffer.slice(0, at, at + piece.numel());
    into_buffer ? slot.copy_(piece) : piece.copy_(slot);
  });
}
#endif
}  // namespace

void Distributed::all_gather_shards(const std::vector<torch::Tensor>& params, int64_t shard) const {
  if (!group) return;
#ifdef SHAPELAW_HAVE_C10D
  torch::NoGradGuard no_grad;
  auto* g = static_cast<Group*>(group.get());
  const std::vector<torch::Tensor> data = detached(params);
  const int64_t total = total_numel(data);
  const auto options = data.front().options();
  for_each_shard_chunk(shard, world, bucket_bytes, [&](int64_t offset, int64_t len) {
    std::vector<at::Tensor> in{torch::zeros({len}, options)};
    copy_piece(data, total, shard, rank, offset, len, in[0], true);
    std::vector<std::vector<at::Tensor>> out(1);
    for (int r = 0; r < world; ++r) out[0].push_back(torch::empty({len}, options));
    g->allgather(out, in);
    for (int r = 0; r < world; ++r)
      if (r != rank) copy_piece(data, total, shard, r, offset, len, out[0][size_t(r)], false);
  });
#else
  (void)params;
  (void)shard;
#endif
}

void Distributed::reduce_scatter_gradients(const std::vector<torch::Tensor>& grads, int64_t shard) const {
  if (!group) return;  // one rank: its gradients are their own average
#ifdef SHAPELAW_HAVE_C10D
  torch::NoGradGuard no_grad;
  auto* g = static_cast<Group*>(group.get());
  const int64_t total = total_numel(grads);
  const auto options = grads.front().options();
  for_each_shard_chunk(shard, world, bucket_bytes, [&](int64_t offset, int64_t len) {
    // every rank's piece of this chunk side by side, as reduce-scatter wants them
    torch::Tensor in = torch::zeros({int64_t(world) * len}, options), out = torch::empty({len}, options);
    for (int r = 0; r < world; ++r)
      copy_piece(grads, total, shard, r, offset, len, in.slice(0, int64_t(r) * len, int64_t(r + 1) * len), true);
    g->reduce_scatter(out, in, rank);
    out.div_(double(world));
    copy_piece(grads, total, shard, rank, offset, len, out, false);
  });
#else
  (void)grads;
  (void)shard;
#endif
}

void Distributed::reduce_to(torch::Tensor& t, int root) const {
  if (!group) return;
#ifdef SHAPELAW_HAVE_C10D
  std::vector<at::Tensor> v{t};
  static_cast<Group*>(group.get())->reduce(v, root);
#else
  (void)t;
  (void)root;
#endif
}

void Distributed::sum_over_ranks(torch::Tensor& t) const {
  if (!group) return;
#ifdef SHAPELAW_HAVE_C10D
  std::vector<at::Tensor> v{t};
  static_cast<Group*>(group.get())->allreduce(v);
#endif
}

int64_t Distributed::sum(int64_t value, const torch::Device& device) const {
  if (!group) return value;
#ifdef SHAPELAW_HAVE_C10D
  std::vector<at::Tensor> t{torch::full({1}, value, torch::TensorOptions().dtype(torch::kLong).device(device))};
  static_cast<Group*>(group.get())->allreduce(t);
  return t[0].item<int64_t>();
#else
  (void)device;
  return value;
#endif
}

void Distributed::check_one_run(const std::string& identity, const torch::Device& device) const {
  if (!group) return;
  // h: 20 bits of the identity's digest. Every rank sees sum(h) = world*h and
  // sum(h^2) = world*h^2 only if all h are equal (Cauchy-Schwarz: world*sum(h^2) >= sum(h)^2,
  // equal only then), so all ranks fail together; world*h^2 < 2^63 for up to 2^23 ranks.
  const int64_t h = std::stoll(sha256_hex(identity).substr(0, 5), nullptr, 16);
  torch::Tensor sums = torch::tensor(std::vector<int64_t>{h, h * h}, torch::kLong).to(device);
  sum_over_ranks(sums);  // one all-reduce of both
  sums = sums.cpu();
  if (sums[0].item<int64_t>() != world * h || sums[1].item<int64_t>() != world * h * h)
    throw Error("rank " + std::to_string(rank) + " of " + std::to_string(world) + " at the rendezvous " +
                launch.master_addr + ":" + std::to_string(launch.master_port) + " (port from " + launch.port_source +
                "): the ranks there are not one run (their binding options or data differ); two launches share that "
                "address: give each its own port (torchrun --standalone, MASTER_PORT, or one srun step per run)");
}

}  // namespace shapelaw
