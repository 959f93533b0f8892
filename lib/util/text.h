#pragma once
// Whitespace trimming, ASCII lower-casing and the one decimal-number syntax, for the
// readers of text tables.
#include <string>

namespace shapelaw {

std::string trim(const std::string& s);
std::string lower(std::string s);
// Only digits, sign, point and exponent ("3.5", "-1e-3"): what a table's number looks
// like. strtod alone also takes "0x10", "inf", "nan" and "1p3" (hex floats).
bool is_decimal_text(const std::string& s);
// A number for a sentence or a table cell: `digits` significant digits, "–" when not finite.
std::string significant(double v, int digits = 4);

}  // namespace shapelaw
