#include "train/zero_gradients.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include "util/error.h"

namespace shapelaw {
namespace {

// Runs after AccumulateGrad has written the parameter's .grad for this backward.
struct GradientReady : torch::autograd::FunctionPostHook {
  GradientReady(ShardedGradients* owner, size_t param) : owner(owner), param(param) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    owner->on_gradient(param);
    return outputs;
  }
  ShardedGradients* owner;
  size_t param;
};

}  // namespace

ShardedGradients::ShardedGradients(std::vector<torch::Tensor> params, int64_t shard, int64_t begin, int64_t end,
                                   const Distributed& dist)
    : params_(std::move(params)), dist_(dist), shard_(shard), begin_(begin), end_(end) {
  int64_t at = 0;
  for (auto& p : params_) {
    if (!p.is_leaf() || !p.requires_grad()) throw Error("ZeRO-2: every parameter must be a leaf that requires grad");
    offset_.push_back(at);
    at += p.numel();
  }
  const int64_t bucket_elems = std::max<int64_t>(1, dist_.bucket_bytes / int64_t(sizeof(float)));
  for (size_t i = 0; i < params_.size();) {
    Bucket b;
    b.first = i;
    b.begin = offset_[i];
    int64_t n = 0;
    while (i < params_.size() && (n == 0 || n + params_[i].numel() <= bucket_elems)) n += params_[i++].numel();
    b.last = i;
    b.end = b.begin + n;
    buckets_.push_back(b);
    for (size_t k = b.first; k < b.last; ++k) bucket_of_.push_back(buckets_.size() - 1);
  }
  seen_.assign(params_.size(), false);
  accumulators_.resize(params_.size());
  hook_keys_.resize(params_.size());
  attach_hooks();
  slice_ = torch::zeros({end_ - begin_}, params_.front().options().dtype(torch::kFloat32).requires_grad(false));
}

ShardedGradients::~ShardedGradients() {
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
}

int64_t ShardedGradients::bytes() const { return slice_.numel() * int64_t(sizeof(float)); }

// Loading a checkpoint into the model (torch::load sets each parameter's storage) gives
// the parameters new AccumulateGrad nodes: the hooks follow them before every step.
void ShardedGradients::attach_hooks() {
  for (size_t i = 0; i < params_.size(); ++i) {
    auto node = torch::autograd::impl::grad_accumulator(params_[i]);
    if (node == accumulators_[i]) continue;
    if (accumulators_[i]) accumulators_[i]->del_post_hook(hook_keys_[i]);
    accumulators_[i] = node;
    hook_keys_[i] = node->add_post_hook(std::make_unique<GradientReady>(this, i));
  }
}

void ShardedGradients::begin_step() {
  attach_hooks();
  averaged_ = false;
  slice_.zero_();
}

void ShardedGradients::on_gradient(size_t i) {
  torch::Tensor& grad = params_[i].mutable_grad();
  if (!grad.defined()) return;
  torch::NoGradGuard no_grad;
  Bucket& b = buckets_[bucket_of_[i]];
  if (!b.staging.defined()) b.staging = torch::zeros({b.end - b.begin}, slice_.options());
  const int64_t at = offset_[i] - b.begin, n = params_[i].numel();
  b.staging.slice(0, at, at + n).add_(grad.reshape({-1}));
  grad = torch::Tensor();  // this rank no longer holds it: the bucket does, until sent
  // A parameter whose gradient comes twice in one backward (a nested one, e.g. a
  // recomputed block's) adds into a fresh staging that end_micro_batch sends.
  if (!seen_[i]) {
    seen_[i] = true;
    if (++b.arrived == b.last - b.first) send(b);
  }
}

void ShardedGradients::send(Bucket& b) {
  torch::NoGradGuard no_grad;
  const int64_t total = offset_.back() + params_.back().numel();
  for (int r = 0; r < dist_.world; ++r) {
    const int64_t lo = std::max(b.begin, std::min(total, int64_t(r) * shard_)),
                  hi = std::min(b.end, std::min(total, int64_t(r + 1) * shard_));
    if (lo >= hi) continue;
    torch::Tensor piece = b.staging.slice(0, lo - b.begin, hi - b.begin);
    dist_.reduce_to(piece, r);
    if (r == dist_.rank) slice_.slice(0, lo - begin_, hi - begin_).add_(piece);
  }
  b.staging = torch::Tensor();
}

void ShardedGradients::end_micro_batch() {
  // Buckets still staging (a parameter without a gradient, or a second one) go now, in
  // bucket order: every rank ran the same graph, so every rank sends the same ones.
  for (auto& b : buckets_) {
    if (b.staging.defined()) send(b);
    b.arrived = 0;
  }
  seen_.assign(params_.size(), false);
  // A gradient the hooks missed would be left out of the update without a sound.
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].grad().defined())
      throw Error("ZeRO-2: the gradient of parameter " + std::to_string(i) +
                  " was not sent (its AccumulateGrad hook did not run)");
}

const torch::Tensor& ShardedGradients::average() {
  if (!averaged_ && dist_.world > 1) slice_.div_(double(dist_.world));
  averaged_ = true;
  return slice_;
}

}  // namespace shapelaw
