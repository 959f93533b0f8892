#pragma once
// torch::save through CheckpointFileWriter (train/checkpoint_files.h): a full disk is one
// Error naming the file, and the SHA-256 comes with the write.
#include <string>

#include <torch/torch.h>

#include "train/checkpoint_files.h"
#include "util/error.h"

namespace shapelaw {

// torch::save(value) into path; returns the file's SHA-256. Throws Error naming the file.
template <class T>
std::string save_checkpoint_file(const T& value, const std::string& path) {
  CheckpointFileWriter writer(path);
  try {
    torch::save(value, writer.sink());
  } catch (const c10::Error& e) {
    throw Error(path + ": cannot write checkpoint file: " + e.what_without_backtrace());
  }
  return writer.finish();
}

}  // namespace shapelaw
