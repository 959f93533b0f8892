#include "model/grad_norm.h"

namespace shapelaw {

torch::Tensor squared_norms(const std::vector<torch::Tensor>& tensors, bool foreach) {
  std::vector<torch::Tensor> fp32;
  for (auto& t : tensors) fp32.push_back(t.to(torch::kFloat32));
  if (foreach) return torch::stack(at::_foreach_norm(fp32, 2)).square();
  std::vector<torch::Tensor> each;
  for (auto& t : fp32) each.push_back(t.norm().square());
  return torch::stack(each);
}

torch::Tensor gradient_norm(const std::vector<torch::Tensor>& params, bool foreach) {
  std::vector<torch::Tensor> grads;
  for (auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty())
    return torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(params.empty() ? torch::kCPU : params.front().device()));
  return squared_norms(grads, foreach).sum().to(torch::kFloat64).sqrt();
}

}  // namespace shapelaw
