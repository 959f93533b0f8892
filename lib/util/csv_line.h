#pragma once
// One CSV record (RFC 4180 quoting: "a,b" and "" escapes; a trailing '\r' dropped),
// shared by the readers of shapelaw's CSV tables.
#include <string>
#include <vector>

namespace shapelaw {

std::vector<std::string> split_csv_line(const std::string& line);

}  // namespace shapelaw
