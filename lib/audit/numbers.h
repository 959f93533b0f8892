#pragma once
// Strict text <-> number helpers shared by the audit's readers and writers. Parsers
// return false (never throw) so callers can name the file, line and field at fault.
#include <cstdint>
#include <optional>
#include <string>

#include "util/text.h"

namespace shapelaw::audit {

using shapelaw::lower;
using shapelaw::trim;

// Whole-string parses; "1,234" and trailing garbage are rejected.
bool parse_int(const std::string& text, int64_t& out);
bool parse_double(const std::string& text, double& out);
// A count with an optional suffix K/M/B/T (case-insensitive) or a plain number,
// e.g. "175B", "1.04B", "27.5M", "6920000000", "1.5e9"; times `scale` when no suffix.
bool parse_count(const std::string& text, double& out, double scale = 1.0);
bool parse_bool(const std::string& text, bool& out);

// Fixed notation with `digits` decimals.
std::string fixed(double value, int digits);
// Human parameter count: 1.56B, 774.0M, 671.0B, 1.20T.
std::string human_count(double count);
// "22.9 [19.7, 26.1]" or "22.9" when no interval.
std::string with_ci(double value, std::optional<double> lo, std::optional<double> hi, int digits);

}  // namespace shapelaw::audit
