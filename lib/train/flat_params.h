#pragma once
// The parameters of a model, in order, seen as one flat vector: the pieces of a range
// [begin, end) of it, each a contiguous slice of one parameter (ZeRO's shards).
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace shapelaw {

// fn(slice of the flattened parameter i, offset of the slice within [begin, end), i)
template <typename Fn>
void for_each_flat_piece(const std::vector<torch::Tensor>& tensors, int64_t begin, int64_t end, Fn fn) {
  int64_t start = 0;
  for (size_t i = 0; i < tensors.size() && start < end; ++i) {
    const int64_t n = tensors[i].numel(), stop = start + n;
    const int64_t a = std::max(begin, start), b = std::min(end, stop);
    if (a < b) fn(tensors[i].view({-1}).slice(0, a - start, b - start), a - begin, i);
    start = stop;
  }
}

// The tensors' data without autograd history: what collectives and in-place updates write.
inline std::vector<torch::Tensor> detached(const std::vector<torch::Tensor>& tensors) {
  std::vector<torch::Tensor> out;
  out.reserve(tensors.size());
  for (auto& t : tensors) out.push_back(t.detach());
  return out;
}

inline int64_t total_numel(const std::vector<torch::Tensor>& tensors) {
  int64_t n = 0;
  for (auto& t : tensors) n += t.numel();
  return n;
}

}  // namespace shapelaw
