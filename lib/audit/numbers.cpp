#include "audit/numbers.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cerrno>
#include <cstdlib>

namespace shapelaw::audit {

bool parse_int(const std::string& text, int64_t& out) {
  std::string t = trim(text);
  if (t.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || end != t.c_str() + t.size()) {
    // Accept integral floats such as "96.0" or "1e3".
    double d;
    if (!parse_double(t, d) || d != std::floor(d) || std::fabs(d) > 9e18) return false;
    out = static_cast<int64_t>(d);
    return true;
  }
  out = v;
  return true;
}

bool parse_double(const std::string& text, double& out) {
  std::string t = trim(text);
  if (!is_decimal_text(t)) return false;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(t.c_str(), &end);
  if (errno != 0 || end != t.c_str() + t.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

bool parse_count(const std::string& text, double& out, double scale) {
  std::string t = trim(text);
  if (t.empty()) return false;
  double mult = scale;
  char last = static_cast<char>(std::toupper(static_cast<unsigned char>(t.back())));
  if (last == 'K' || last == 'M' || last == 'B' || last == 'T' || last == 'G') {
    mult = last == 'K' ? 1e3 : last == 'M' ? 1e6 : (last == 'B' || last == 'G') ? 1e9 : 1e12;
    t = trim(t.substr(0, t.size() - 1));
  }
  double v;
  if (!parse_double(t, v) || v < 0) return false;
  out = v * mult;
  return true;
}

bool parse_bool(const std::string& text, bool& out) {
  std::string t = lower(trim(text));
  if (t == "true" || t == "yes" || t == "1" || t == "y") return out = true, true;
  if (t == "false" || t == "no" || t == "0" || t == "n") return out = false, true;
  return false;
}

std::string fixed(double value, int digits) {
  if (!std::isfinite(value)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  std::string s = buf;
  if (s == "-0" || s.rfind("-0.", 0) == 0) {
    bool all_zero = true;
    for (char c : s.substr(1))
      if (c != '0' && c != '.') all_zero = false;
    if (all_zero) s = s.substr(1);
  }
  return s;
}

std::string human_count(double count) {
  double a = std::fabs(count);
  if (a >= 1e12) return fixed(count / 1e12, 2) + "T";
  if (a >= 1e9) return fixed(count / 1e9, 2) + "B";
  if (a >= 1e6) return fixed(count / 1e6, 1) + "M";
  if (a >= 1e3) return fixed(count / 1e3, 1) + "K";
  return fixed(count, 0);
}

std::string with_ci(double value, std::optional<double> lo, std::optional<double> hi, int digits) {
  std::string s = fixed(value, digits);
  if (lo && hi) s += " [" + fixed(*lo, digits) + ", " + fixed(*hi, digits) + "]";
  return s;
}

}  // namespace shapelaw::audit
