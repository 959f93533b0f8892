#pragma once
// A corpus of plain-text documents (one document a file: a book, a chapter, a speech)
// converted into the SlimPajama layout with Brown's hold-out rule (corpus/layout.h):
// how the corpora of scripts/fetch-corpus other than Brown are imported.
#include <string>
#include <vector>

#include "corpus/layout.h"

namespace shapelaw {

using TextImportSummary = ImportSummary;  // words: whitespace-separated

// Each input is a file (one document) or a directory, whose *.txt files are its
// documents in sorted path order; inputs keep the order given, which is the order
// the split rule counts. Carriage returns and whitespace at either end of a document
// are dropped; a file that is then empty, or not UTF-8, is an error naming it (and
// the line). meta carries redpajama_set_name = set_name and source = the path under
// its input directory, prefixed by that directory's name (or the file's name).
TextImportSummary import_text_documents(const std::vector<std::string>& inputs, const std::string& set_name,
                                        const std::string& out_dir);

}  // namespace shapelaw
