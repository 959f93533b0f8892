#pragma once
// Bytes that are not UTF-8, as a UTF-8 decoder of the web platform sees them: the
// reference GPT-2 encoder (gpt-3-encoder's Encoder.js under node) only ever sees text
// that node decoded, so an encoder that matches it byte for byte must first do the same.
#include <string>
#include <string_view>

namespace shapelaw {

// True when `text` is well-formed UTF-8 (no surrogates, no overlongs, <= U+10FFFF).
bool is_valid_utf8(std::string_view text);

// `text` with each maximal subpart of an ill-formed sequence replaced by U+FFFD (the
// WHATWG Encoding Standard's decoder, which is what node's TextDecoder and
// fs.readFileSync(path, 'utf8') do), e.g. "\xE2\x82" -> one U+FFFD, "\xC0\x80" -> two.
std::string replace_invalid_utf8(std::string_view text);

}  // namespace shapelaw
