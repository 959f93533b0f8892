#pragma once
// Whitespace trimming and ASCII lower-casing, for the readers of text tables.
#include <string>

namespace shapelaw {

std::string trim(const std::string& s);
std::string lower(std::string s);

}  // namespace shapelaw
