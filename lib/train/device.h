#pragma once
// Where a run computes: the device of this rank (checked against the GPUs present),
// bf16 autocast or fp32, and the matmul peak used as the MFU denominator.
#include <string>

#include <torch/torch.h>

#include "train/distributed.h"

namespace shapelaw {

struct RunDevice {
  torch::Device device{torch::kCPU};
  bool bf16 = false;
};

// device "cpu" | "cuda" (one GPU per local rank), precision "auto" | "fp32" | "bf16".
RunDevice select_device(const std::string& device, const std::string& precision, const Distributed& dist);

// FLOP/s of a large matmul on the device (fp32, or bf16): the MFU denominator when
// --peak-flops is not given. Leaves torch's default generator alone.
double measure_matmul_peak(const torch::Device& device, bool bf16);

}  // namespace shapelaw
