#include "tokenizer/gpt2_pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <string>

#include "util/error.h"

namespace shapelaw {

namespace {

// JavaScript's \s (WhiteSpace and LineTerminator of ECMA-262): unlike PCRE's and
// Python's it has U+FEFF and lacks U+0085 and U+180E.
#define JS_SPACE "\\t\\n\\x{0B}\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}"
// Letters and numbers the reference's Unicode (node 20's ICU 78: Unicode 17.0) has and
// PCRE2 10.42's (Unicode 14.0) does not; PCRE2 has none that node lacks. Derived by
// testing every code point in both; tests/tokenizer checks it again against node.
#define EXTRA_LETTERS                                                                                          \
  "\\x{88F}\\x{C5C}\\x{CDC}\\x{1C89}-\\x{1C8A}\\x{A7CB}-\\x{A7CF}\\x{A7D2}\\x{A7D4}\\x{A7DA}-\\x{A7DC}"        \
  "\\x{A7F1}\\x{105C0}-\\x{105F3}\\x{10940}-\\x{10959}\\x{10D4A}-\\x{10D65}\\x{10D6F}-\\x{10D85}"              \
  "\\x{10EC2}-\\x{10EC7}\\x{1123F}-\\x{11240}\\x{11380}-\\x{11389}\\x{1138B}\\x{1138E}\\x{11390}-\\x{113B5}"   \
  "\\x{113B7}\\x{113D1}\\x{113D3}\\x{11BC0}-\\x{11BE0}\\x{11DB0}-\\x{11DDB}\\x{11F02}\\x{11F04}-\\x{11F10}"    \
  "\\x{11F12}-\\x{11F33}\\x{1342F}\\x{13441}-\\x{13446}\\x{13460}-\\x{143FA}\\x{16100}-\\x{1611D}"            \
  "\\x{16D40}-\\x{16D6C}\\x{16EA0}-\\x{16EB8}\\x{16EBB}-\\x{16ED3}\\x{16FF2}-\\x{16FF3}\\x{187F8}-\\x{187FF}"  \
  "\\x{18CFF}\\x{18D09}-\\x{18D1E}\\x{18D80}-\\x{18DF2}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}"             \
  "\\x{1E030}-\\x{1E06D}\\x{1E4D0}-\\x{1E4EB}\\x{1E5D0}-\\x{1E5ED}\\x{1E5F0}\\x{1E6C0}-\\x{1E6DE}"            \
  "\\x{1E6E0}-\\x{1E6E2}\\x{1E6E4}-\\x{1E6E5}\\x{1E6E7}-\\x{1E6ED}\\x{1E6F0}-\\x{1E6F4}\\x{1E6FE}-\\x{1E6FF}"  \
  "\\x{2B739}-\\x{2B73F}\\x{2CEA2}-\\x{2CEAD}\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{33479}"
#define EXTRA_NUMBERS                                                                                          \
  "\\x{10D40}-\\x{10D49}\\x{116D0}-\\x{116E3}\\x{11BF0}-\\x{11BF9}\\x{11DE0}-\\x{11DE9}\\x{11F50}-\\x{11F59}"  \
  "\\x{16130}-\\x{16139}\\x{16D70}-\\x{16D79}\\x{16FF4}-\\x{16FF6}\\x{1CCF0}-\\x{1CCF9}\\x{1D2C0}-\\x{1D2D3}"  \
  "\\x{1E4F0}-\\x{1E4F9}\\x{1E5F1}-\\x{1E5FA}"
#define LETTER "\\p{L}" EXTRA_LETTERS
#define NUMBER "\\p{N}" EXTRA_NUMBERS

constexpr const char* kPattern =
    "'s|'t|'re|'ve|'m|'ll|'d"
    "| ?[" LETTER "]+"
    "| ?[" NUMBER "]+"
    "| ?[^" JS_SPACE LETTER NUMBER "]+"
    "|[" JS_SPACE "]+(?![^" JS_SPACE "])"
    "|[" JS_SPACE "]+";

}  // namespace

struct Gpt2Pretokenizer::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

Gpt2Pretokenizer::Gpt2Pretokenizer() : impl_(std::make_unique<Impl>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  // UCP: \p{..} by Unicode properties; no \s, \w or \d is left to PCRE's own meaning.
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(kPattern), PCRE2_ZERO_TERMINATED,
                              PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
  if (!impl_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error("GPT-2 pre-tokenization pattern: " + std::string(reinterpret_cast<char*>(message)) + " at " +
                std::to_string(offset));
  }
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Gpt2Pretokenizer::~Gpt2Pretokenizer() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

struct Gpt2Pretokenizer::Matcher::Impl {
  const Gpt2Pretokenizer::Impl* pattern;
  pcre2_match_data* match = nullptr;
};

Gpt2Pretokenizer::Matcher::Matcher(const Gpt2Pretokenizer& pretokenizer) : impl_(std::make_unique<Impl>()) {
  impl_->pattern = pretokenizer.impl_.get();
  impl_->match = pcre2_match_data_create_from_pattern(impl_->pattern->code, nullptr);
  if (!impl_->match) throw std::bad_alloc();
}

Gpt2Pretokenizer::Matcher::~Matcher() {
  if (impl_ && impl_->match) pcre2_match_data_free(impl_->match);
}

void Gpt2Pretokenizer::Matcher::split(std::string_view text, std::vector<std::string_view>& pieces) {
  pieces.clear();
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(impl_->match);
  size_t at = 0;
  while (at < text.size()) {
    // The text was checked (or repaired) as UTF-8 before: no check per match.
    int rc = impl_->pattern->jit
                 ? pcre2_jit_match(impl_->pattern->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, impl_->match, nullptr)
                 : pcre2_match(impl_->pattern->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, impl_->match, nullptr);
    if (rc < 0) {
      // Every character matches one alternative or another, so only an internal limit
      // (not a property of the text) stops a match.
      if (rc == PCRE2_ERROR_NOMATCH) throw Error("GPT-2 pre-tokenization: no piece at byte " + std::to_string(at));
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw Error("GPT-2 pre-tokenization: " + std::string(reinterpret_cast<char*>(message)));
    }
    if (ovector[0] != at || ovector[1] <= at)
      throw Error("GPT-2 pre-tokenization: a gap at byte " + std::to_string(at));
    pieces.emplace_back(text.data() + at, ovector[1] - at);
    at = ovector[1];
  }
}

}  // namespace shapelaw
