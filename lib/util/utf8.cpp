#include "util/utf8.h"

namespace shapelaw {

namespace {

// Length of the well-formed sequence starting at `i`, or 0 with `bad` set to how many
// bytes form its maximal subpart (at least 1): the bounds of the second byte are the
// ones of the Unicode Standard's Table 3-7, which rule out overlongs and surrogates.
size_t sequence_length(std::string_view s, size_t i, size_t& bad) {
  const unsigned char b = s[i];
  bad = 1;
  if (b < 0x80) return 1;
  size_t n;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) { bad = k; return 0; }
    const unsigned char c = s[i + k];
    if (c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xBF)) { bad = k; return 0; }
  }
  return n;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  size_t i = 0, bad;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) { ++i; continue; }
    size_t n = sequence_length(text, i, bad);
    if (!n) return false;
    i += n;
  }
  return true;
}

std::string replace_invalid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0, bad;
  while (i < text.size()) {
    size_t n = sequence_length(text, i, bad);
    if (n) {
      out.append(text.data() + i, n);
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return out;
}

}  // namespace shapelaw
