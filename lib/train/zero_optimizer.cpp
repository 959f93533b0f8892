#include "train/zero_optimizer.h"

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>

#include "train/checkpoint_save.h"
#include "train/flat_params.h"
#include "model/grad_norm.h"
#include "util/error.h"

namespace shapelaw {

ShardedAdamW::ShardedAdamW(std::vector<torch::Tensor> params, std::vector<ShardSettings> settings, double beta1,
                           double beta2, const Distributed& dist, int stage)
    : params_(std::move(params)), settings_(std::move(settings)), beta1_(beta1), beta2_(beta2), dist_(dist) {
  if (params_.empty() || params_.size() != settings_.size())
    throw Error("ZeRO optimizer: one group setting per parameter tensor is needed");
  total_ = total_numel(params_);
  shard_ = (total_ + dist_.world - 1) / dist_.world;
  begin_ = std::min(total_, int64_t(dist_.rank) * shard_);
  end_ = std::min(total_, begin_ + shard_);
  auto options = params_.front().options().dtype(torch::kFloat32).requires_grad(false);
  m_ = torch::zeros({end_ - begin_}, options);
  v_ = torch::zeros({end_ - begin_}, options);
  if (stage >= 2) grads_ = std::make_unique<ShardedGradients>(params_, shard_, begin_, end_, dist_);
}

void ShardedAdamW::begin_gradients() {
  if (grads_) grads_->begin_step();
}

void ShardedAdamW::end_micro_batch() {
  if (grads_) grads_->end_micro_batch();
}

int64_t ShardedAdamW::state_bytes() const { return (m_.numel() + v_.numel()) * int64_t(sizeof(float)); }

std::vector<torch::Tensor> ShardedAdamW::gradients() const {
  std::vector<torch::Tensor> grads;
  for (auto& p : params_) {
    if (!p.grad().defined()) throw Error("ZeRO optimizer: a parameter has no gradient (every one takes part in the loss)");
    grads.push_back(p.grad());
  }
  return grads;
}

torch::Tensor ShardedAdamW::reduce_gradients() {
  torch::NoGradGuard no_grad;
  // this rank's slice of the averaged gradients, one piece per parameter it meets: the
  // plain optimizer's per-tensor norms (model/grad_norm.h), so that on one rank the clip
  // factor is bit for bit the plain one
  std::vector<torch::Tensor> pieces;
  if (sliced_gradients()) {
    const torch::Tensor& slice = grads_->average();
    for_each_flat_piece(params_, begin_, end_, [&](torch::Tensor piece, int64_t at, size_t) {
      pieces.push_back(slice.slice(0, at, at + piece.numel()));
    });
  } else {
    std::vector<torch::Tensor> grads = gradients();
    dist_.reduce_scatter_gradients(grads, shard_);
    for_each_flat_piece(grads, begin_, end_, [&](torch::Tensor piece, int64_t, size_t) { pieces.push_back(piece); });
  }
  torch::Tensor sum = pieces.empty() ? torch::zeros({}, m_.options())
                                     : squared_norms(pieces, /*foreach=*/!m_.device().is_cpu()).sum();
  dist_.sum_over_ranks(sum);
  return sum.to(torch::kFloat64).sqrt();
}

std::vector<double> ShardedAdamW::gradient_squares() {
  torch::NoGradGuard no_grad;
  const auto options = m_.options().dtype(torch::kFloat64);
  std::vector<torch::Tensor> squares(params_.size());
  // the norm reduces the fp32 piece in place (no float64 copy of a slice the size of the
  // model's gradients): a probe step then holds no more than a normal one, and each square
  // is computed by the plain path's kernel (model/grad_norm.h)
  auto square = [&](const torch::Tensor& piece, size_t i) {
    squares[i] = squared_norms({piece}, /*foreach=*/false)[0].to(torch::kFloat64);
  };
  // a parameter meets this rank's contiguous slice in one piece at most
  if (sliced_gradients()) {
    const torch::Tensor& slice = grads_->average();
    for_each_flat_piece(params_, begin_, end_, [&](torch::Tensor piece, int64_t at, size_t i) {
      square(slice.slice(0, at, at + piece.numel()), i);
    });
  } else {  // stage 1: .grad averaged over this rank's slice by reduce_gradients' reduce-scatter
    for_each_flat_piece(gradients(), begin_, end_, [&](torch::Tensor piece, int64_t, size_t i) { square(piece, i); });
  }
  for (auto& s : squares)
    if (!s.defined()) s = torch::zeros({}, options);
  torch::Tensor all = torch::stack(squares);
  dist_.sum_over_ranks(all);
  all = all.cpu().contiguous();
  return std::vector<double>(all.data_ptr<double>(), all.data_ptr<double>() + all.numel());
}

void ShardedAdamW::step(const torch::Tensor& clip_scale) {
  torch::NoGradGuard no_grad;
  ++steps_;
  const bool on_cpu = clip_scale.device().is_cpu();
  const double cpu_clip_scale = on_cpu ? clip_scale.item<double>() : 1.0;  // read: no wait on the CPU
  const bool sliced = sliced_gradients();
  const std::vector<torch::Tensor> data = detached(params_), grads = sliced ? std::vector<torch::Tensor>() : gradients();
  // off the CPU, the pieces of each parameter group go to ATen's fused AdamW in one call
  // (one launch per group, not per parameter; the arithmetic is element-wise, the same bits)
  std::map<std::tuple<double, double, double>, std::array<std::vector<torch::Tensor>, 4>> fused;
  for_each_flat_piece(data, begin_, end_, [&](torch::Tensor piece, int64_t at, size_t i) {
    const int64_t n = piece.numel();
    const int64_t in_param = piece.storage_offset() - data[i].storage_offset();
    torch::Tensor g = sliced ? grads_->average().slice(0, at, at + n)
                             : grads[i].reshape({-1}).slice(0, in_param, in_param + n);
    torch::Tensor m = m_.slice(0, at, at + n), v = v_.slice(0, at, at + n);
    const ShardSettings& set = settings_[i];
    if (on_cpu && piece.device().is_cpu() && piece.scalar_type() == torch::kFloat32 && g.is_contiguous() &&
        g.scalar_type() == torch::kFloat32) {
      adamw_update(piece.data_ptr<float>(), g.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), n,
                   hyper(set), steps_, cpu_clip_scale);
      torch::autograd::impl::bump_version(params_[i]);
    } else {
      auto& lists = fused[{set.lr_mult, set.weight_decay, set.eps}];
      lists[0].push_back(piece);
      lists[1].push_back(g);
      lists[2].push_back(m);
      lists[3].push_back(v);
    }
  });
  for (auto& [key, lists] : fused) {  // e.g. CUDA: the clip scale read on the device
    const auto [lr_mult, weight_decay, eps] = key;
    adamw_update(lists[0], lists[1], lists[2], lists[3], hyper({lr_mult, weight_decay, eps}), steps_,
                 clip_scale.to(lists[0].front().device()));
  }
  dist_.all_gather_shards(params_, shard_);
}

AdamWHyper ShardedAdamW::hyper(const ShardSettings& set) const {
  return AdamWHyper{lr_ * set.lr_mult, beta1_, beta2_, set.eps, set.weight_decay};
}

std::string ShardedAdamW::file_name(int rank) { return "optimizer-rank" + std::to_string(rank) + ".pt"; }

std::string ShardedAdamW::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  auto meta = torch::tensor({steps_, begin_, end_, total_, int64_t(dist_.world)}, torch::kLong);
  const std::string sha256 = save_checkpoint_file(std::vector<torch::Tensor>{meta, m_.cpu(), v_.cpu()}, tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error(path + ": cannot rename the optimizer shard into place: " + ec.message());
  return sha256;
}

void ShardedAdamW::load(const std::string& path) {
  std::vector<torch::Tensor> saved;
  try {
    torch::load(saved, path);
  } catch (const c10::Error& e) {
    throw Error(path + ": unreadable optimizer shard: " + e.what_without_backtrace());
  }
  if (saved.size() != 3 || saved[0].numel() != 5) throw Error(path + ": not a ZeRO optimizer shard");
  auto meta = saved[0].to(torch::kLong);
  const int64_t begin = meta[1].item<int64_t>(), end = meta[2].item<int64_t>(), total = meta[3].item<int64_t>();
  const int64_t world = meta[4].item<int64_t>();
  if (world != dist_.world || total != total_ || begin != begin_ || end != end_)
    throw Error(path + ": the shard holds elements [" + std::to_string(begin) + ", " + std::to_string(end) + ") of " +
                std::to_string(total) + " parameters over " + std::to_string(world) + " ranks; this rank needs [" +
                std::to_string(begin_) + ", " + std::to_string(end_) + ") of " + std::to_string(total_) + " over " +
                std::to_string(dist_.world) + " (resume with the same world size)");
  steps_ = meta[0].item<int64_t>();
  m_.copy_(saved[1]);
  v_.copy_(saved[2]);
}

}  // namespace shapelaw
