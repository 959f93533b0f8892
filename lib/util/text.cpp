#include "util/text.h"

#include <cctype>
#include <cmath>
#include <sstream>

namespace shapelaw {

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_decimal_text(const std::string& s) {
  if (s.empty()) return false;
  bool digit = false;
  for (char c : s) {
    if (c >= '0' && c <= '9') digit = true;
    else if (c != '+' && c != '-' && c != '.' && c != 'e' && c != 'E') return false;
  }
  return digit;
}

std::string significant(double v, int digits) {
  if (!std::isfinite(v)) return "–";
  std::ostringstream os;
  os.precision(digits);
  os << v;
  return os.str();
}

}  // namespace shapelaw
