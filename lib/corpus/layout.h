#pragma once
// The SlimPajama layout that every importer writes (docs/formats.md, "Corpus layout"):
// one rule for which documents are held out, one writer of the split directories, so
// that Brown and the plain-text corpora are split and laid out alike.
#include <string>
#include <vector>

namespace shapelaw {

// JSON lines (one record each) by split, in input order.
struct SplitRecords {
  std::vector<std::string> train, validation, test;
  // The hold-out rule: the record at 0-based input position i (the count added before
  // it) goes to validation when i % 50 == 0, to test when i % 50 == 1, else to train
  // (2% + 2%). By position, not content, so that a corpus in a fixed order splits the
  // same on any machine and each source of a combined corpus is held out alike.
  void add(std::string record);
  size_t size() const { return train.size() + validation.size() + test.size(); }
};

// What an importer wrote: documents by split, and its own count of words.
struct ImportSummary {
  int train = 0, validation = 0, test = 0;
  long long words = 0;
};

// <out_dir>/train/chunk1/example_train_N.jsonl.zst (100 records a file),
// <out_dir>/{validation,test}/chunk1/example_holdout_0.jsonl.zst; each file atomic.
ImportSummary write_slimpajama(const std::string& out_dir, const SplitRecords& records, long long words);

}  // namespace shapelaw
