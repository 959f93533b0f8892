#include "corpus/layout.h"

#include <algorithm>

#include <zstd.h>

#include "util/atomic_file.h"
#include "util/error.h"

namespace shapelaw {

namespace {

void write_jsonl_zst(const std::string& path, const std::vector<std::string>& lines) {
  std::string content;
  for (const auto& line : lines) content += line + "\n";
  std::string compressed(ZSTD_compressBound(content.size()), '\0');
  size_t size = ZSTD_compress(compressed.data(), compressed.size(), content.data(), content.size(), 19);
  if (ZSTD_isError(size)) throw Error(located(path, 0, std::string("zstd: ") + ZSTD_getErrorName(size)));
  compressed.resize(size);
  write_file_atomic(path, compressed);
}

}  // namespace

void SplitRecords::add(std::string record) {
  size_t index = size();
  auto& bucket = index % 50 == 0 ? validation : index % 50 == 1 ? test : train;
  bucket.push_back(std::move(record));
}

ImportSummary write_slimpajama(const std::string& out_dir, const SplitRecords& records, long long words) {
  for (const char* split : {"train", "validation", "test"}) make_directories(out_dir + "/" + split + "/chunk1");
  const size_t per_file = 100;
  const auto& train = records.train;
  for (size_t start = 0, n = 0; start < train.size(); start += per_file, ++n) {
    std::vector<std::string> part(train.begin() + start, train.begin() + std::min(train.size(), start + per_file));
    write_jsonl_zst(out_dir + "/train/chunk1/example_train_" + std::to_string(n) + ".jsonl.zst", part);
  }
  write_jsonl_zst(out_dir + "/validation/chunk1/example_holdout_0.jsonl.zst", records.validation);
  write_jsonl_zst(out_dir + "/test/chunk1/example_holdout_0.jsonl.zst", records.test);
  return {int(records.train.size()), int(records.validation.size()), int(records.test.size()), words};
}

}  // namespace shapelaw
