#pragma once
// Where a tool writes an output file: "-" means stdout (written and flushed at once),
// anything else a file written atomically (util/atomic_file.h).
#include <string>

namespace shapelaw {

bool is_stdout(const std::string& path);
void write_output(const std::string& path, const std::string& text);

}  // namespace shapelaw
