#include "train/evaluate.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "compat/torch_compat.h"

namespace shapelaw {

torch::Tensor load_eval_windows(const TokenDataset& dataset, const std::string& split, int64_t max_tokens,
                                int64_t window) {
  if (!dataset.has_split(split)) return {};
  const TokenSplit& s = dataset.split(split);
  int64_t n = std::min<int64_t>(std::max<int64_t>(1, max_tokens / window), int64_t(s.num_tokens()) / window);
  if (n <= 0) return {};
  std::vector<uint32_t> buf(size_t(n * window));
  s.read(0, buf.size(), buf.data());
  return torch::from_blob(buf.data(), {n, window}, torch::kInt32).to(torch::kLong);
}

double estimate_loss(TransformerImpl& model, const torch::Tensor& windows, int64_t micro, const torch::Device& device,
                     bool bf16) {
  if (!windows.defined()) return std::nan("");
  model.eval();
  torch::NoGradGuard no_grad;
  compat::AutocastBf16 autocast(bf16);
  const int64_t n = windows.size(0), seq = windows.size(1) - 1;
  double sum = 0;
  for (int64_t i = 0; i < n; i += micro) {
    auto w = windows.slice(0, i, std::min(n, i + micro)).to(device);
    auto loss = model.loss(w.slice(1, 0, seq), w.slice(1, 1, seq + 1));
    sum += loss.item<double>() * double(w.size(0));
  }
  return sum / double(n);
}

}  // namespace shapelaw
