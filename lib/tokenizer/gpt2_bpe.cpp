#include "tokenizer/gpt2_bpe.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "util/utf8.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/sha256.h"

namespace shapelaw {

namespace {

constexpr const char* kEndOfText = "<|endoftext|>";
// Bounds a session's memory on a corpus of endless distinct pieces; emptying the
// cache changes how fast, never what.
constexpr size_t kMaxCachedPieces = 1 << 19, kMaxCachedIds = 1 << 26;

// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the other 68
// for U+0100.. in byte order, so every token is printable text in encoder.json.
void byte_code_points(uint32_t (&code_point)[256]) {
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    code_point[b] = printable ? b : next++;
  }
}

void append_utf8(std::string& s, uint32_t c) {
  if (c < 0x80) {
    s += char(c);
  } else {
    s += char(0xC0 | (c >> 6));  // every code point of the byte map is below U+0800
    s += char(0x80 | (c & 0x3F));
  }
}

// The bytes a token string of encoder.json or vocab.bpe stands for; false if it has a
// character outside the byte map.
bool token_to_bytes(const std::string& token, const int (&byte_of)[512], std::string& bytes) {
  bytes.clear();
  for (size_t i = 0; i < token.size();) {
    const unsigned char c = token[i];
    uint32_t cp;
    if (c < 0x80) {
      cp = c, i += 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < token.size()) {
      cp = ((c & 0x1F) << 6) | (static_cast<unsigned char>(token[i + 1]) & 0x3F), i += 2;
    } else {
      return false;
    }
    if (cp >= 512 || byte_of[cp] < 0) return false;
    bytes += char(byte_of[cp]);
  }
  return true;
}

uint64_t pair_key(uint32_t left, uint32_t right) { return (uint64_t(left) << 32) | right; }

}  // namespace

Gpt2Bpe::Gpt2Bpe(const std::string& directory) : directory_(directory) {
  const std::string encoder_path = directory + "/encoder.json", merges_path = directory + "/vocab.bpe";
  const std::string encoder_text = read_file(encoder_path), merges_text = read_file(merges_path);

  uint32_t code_point[256];
  byte_code_points(code_point);
  int byte_of[512];
  std::fill(std::begin(byte_of), std::end(byte_of), -1);
  for (int b = 0; b < 256; ++b) byte_of[code_point[b]] = b;

  nlohmann::json encoder;
  try {
    encoder = nlohmann::json::parse(encoder_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(located(encoder_path, 0, std::string("not JSON: ") + e.what()));
  }
  if (!encoder.is_object() || encoder.empty())
    throw Error(located(encoder_path, 0, "expected an object of token -> id"));
  const size_t vocab = encoder.size();
  std::vector<std::string> bytes_of(vocab);
  std::vector<bool> seen(vocab, false);
  std::unordered_map<std::string, uint32_t> id_of;
  id_of.reserve(vocab);
  std::string bytes;
  for (auto it = encoder.begin(); it != encoder.end(); ++it) {
    const std::string& token = it.key();
    if (!it->is_number_unsigned() || it->get<uint64_t>() >= vocab)
      throw Error(located(encoder_path, 0, "token '" + token + "': id " + it->dump() + " is not an integer in 0.." +
                                               std::to_string(vocab - 1)));
    const uint32_t id = it->get<uint32_t>();
    if (seen[id]) throw Error(located(encoder_path, 0, "token '" + token + "': id " + std::to_string(id) + " given twice"));
    seen[id] = true;
    // <|endoftext|> too is spelled in the byte map: decoding it alone gives that text, as
    // the reference's decode does (within a document it never occurs: EOS ends one).
    if (!token_to_bytes(token, byte_of, bytes))
      throw Error(located(encoder_path, 0, "token '" + token + "' has a character outside GPT-2's byte map"));
    bytes_of[id] = bytes;
    id_of.emplace(token, id);
  }
  auto eot = id_of.find(kEndOfText);
  if (eot == id_of.end()) throw Error(located(encoder_path, 0, std::string("no ") + kEndOfText + " token"));
  info_.kind = "gpt2";
  info_.vocab_size = uint32_t(vocab);
  info_.eos_id = eot->second;
  info_.model_sha256 = sha256_hex(encoder_text + merges_text);  // as shards/tokenizer_id.h names it

  token_offset_.reserve(vocab + 1);
  for (const auto& b : bytes_of) {
    token_offset_.push_back(uint32_t(token_bytes_.size()));
    token_bytes_ += b;
  }
  token_offset_.push_back(uint32_t(token_bytes_.size()));

  std::string single;
  for (int b = 0; b < 256; ++b) {
    single.clear();
    append_utf8(single, code_point[b]);
    auto it = id_of.find(single);
    if (it == id_of.end())
      throw Error(located(encoder_path, 0, "no token for byte " + std::to_string(b) + " ('" + single + "')"));
    byte_token_[b] = it->second;
  }

  // As Encoder.js reads vocab.bpe: its first line (the version) and what follows the
  // last newline are not merges.
  std::vector<std::string_view> lines;
  for (size_t at = 0;;) {
    size_t end = merges_text.find('\n', at);
    if (end == std::string::npos) {
      lines.emplace_back(merges_text.data() + at, merges_text.size() - at);
      break;
    }
    lines.emplace_back(merges_text.data() + at, end - at);
    at = end + 1;
  }
  if (lines.size() < 2) throw Error(located(merges_path, 0, "no merges"));
  // Merging by rank one pair occurrence at a time (Session::merge) gives what merging
  // every occurrence of the best pair at once gives only if a merge's token first
  // appears with it, so that every pair it then forms ranks later: no merge uses a
  // token that a later merge makes, and no two make the same one. GPT-2's list is so
  // ordered; another list is refused.
  std::vector<uint32_t> made_at(vocab, UINT32_MAX);
  for (int b = 0; b < 256; ++b) made_at[byte_token_[b]] = 0;
  merges_.reserve(lines.size());
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    const std::string_view line = lines[i];
    const size_t space = line.find(' ');
    const long long line_number = (long long)i + 1;
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw Error(located(merges_path, line_number, "expected two tokens separated by one space"));
    const std::string left(line.substr(0, space)), right(line.substr(space + 1));
    auto l = id_of.find(left), r = id_of.find(right), m = id_of.find(left + right);
    if (l == id_of.end() || r == id_of.end() || m == id_of.end())
      throw Error(located(merges_path, line_number, "a token of this merge, or its result, is not in encoder.json"));
    const uint32_t rank = uint32_t(i - 1);
    if (made_at[l->second] > rank || made_at[r->second] > rank)
      throw Error(located(merges_path, line_number, "merges a token that only a later merge makes"));
    if (made_at[m->second] != UINT32_MAX)
      throw Error(located(merges_path, line_number, "makes a token that an earlier merge makes too"));
    made_at[m->second] = rank + 1;
    merges_.emplace(pair_key(l->second, r->second), Merge{rank, m->second});
  }
}

Gpt2Bpe::~Gpt2Bpe() = default;

const Gpt2Bpe::Merge* Gpt2Bpe::find_merge(uint32_t left, uint32_t right) const {
  auto it = merges_.find(pair_key(left, right));
  return it == merges_.end() ? nullptr : &it->second;
}

std::string_view Gpt2Bpe::token_bytes(uint32_t id) const {
  return std::string_view(token_bytes_).substr(token_offset_[id], token_offset_[id + 1] - token_offset_[id]);
}

void Gpt2Bpe::decode(const uint32_t* ids, size_t count, std::string& text) const {
  for (size_t i = 0; i < count; ++i) {
    if (ids[i] >= info_.vocab_size)
      throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary of " + directory_ + " (size " +
                  std::to_string(info_.vocab_size) + ")");
    text += token_bytes(ids[i]);
  }
}

struct Gpt2Bpe::Session::Scratch {
  struct Candidate {
    uint32_t rank, position, left, right, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : position > o.position; }
  };
  std::vector<uint32_t> id;
  std::vector<int32_t> prev, next;
  std::vector<char> alive;
  std::vector<Candidate> heap;
};

Gpt2Bpe::Session::Session(const Gpt2Bpe& bpe)
    : bpe_(bpe), matcher_(bpe.pretokenizer_), scratch_(std::make_unique<Scratch>()) {}

Gpt2Bpe::Session::~Session() = default;

void Gpt2Bpe::Session::encode(std::string_view text, std::vector<uint32_t>& ids) {
  if (!is_valid_utf8(text)) {
    repaired_ = replace_invalid_utf8(text);
    text = repaired_;
  }
  matcher_.split(text, pieces_);
  for (std::string_view piece : pieces_) {
    if (piece.size() == 1) {
      ids.push_back(bpe_.byte_token_[static_cast<unsigned char>(piece[0])]);
      continue;
    }
    auto hit = cache_.find(std::string(piece));
    if (hit != cache_.end()) {
      ids.insert(ids.end(), cached_.begin() + hit->second.first,
                 cached_.begin() + hit->second.first + hit->second.second);
      continue;
    }
    const size_t before = ids.size();
    merge(piece, ids);
    if (cache_.size() >= kMaxCachedPieces || cached_.size() >= kMaxCachedIds) {
      cache_.clear();
      cached_.clear();
    }
    cache_.emplace(std::string(piece), std::make_pair(uint32_t(cached_.size()), uint32_t(ids.size() - before)));
    cached_.insert(cached_.end(), ids.begin() + before, ids.end());
  }
}

// Byte tokens merged by rank: the best-ranked adjacent pair first, the leftmost of
// equal pairs first, which is what Encoder.js's bpe() gives (it merges every
// occurrence of the best pair, left to right, per step) in O(n log n) rather than
// O(n^2) for a long piece.
void Gpt2Bpe::Session::merge(std::string_view piece, std::vector<uint32_t>& ids) {
  Scratch& s = *scratch_;
  const int32_t n = int32_t(piece.size());
  s.id.resize(n);
  s.prev.resize(n);
  s.next.resize(n);
  s.heap.clear();
  for (int32_t i = 0; i < n; ++i) {
    s.id[i] = bpe_.byte_token_[static_cast<unsigned char>(piece[i])];
    s.prev[i] = i - 1;
    s.next[i] = i + 1 < n ? i + 1 : -1;
  }
  auto greater = [](const Scratch::Candidate& a, const Scratch::Candidate& b) { return a > b; };
  auto consider = [&](int32_t left) {
    if (left < 0 || s.next[left] < 0) return;
    const uint32_t l = s.id[left], r = s.id[s.next[left]];
    if (const Merge* m = bpe_.find_merge(l, r)) {
      s.heap.push_back({m->rank, uint32_t(left), l, r, m->merged});
      std::push_heap(s.heap.begin(), s.heap.end(), greater);
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  std::vector<char>& alive = s.alive;  // a dead symbol was merged into its left neighbour
  alive.assign(n, 1);
  while (!s.heap.empty()) {
    std::pop_heap(s.heap.begin(), s.heap.end(), greater);
    const Scratch::Candidate c = s.heap.back();
    s.heap.pop_back();
    const int32_t left = int32_t(c.position), right = s.next[left];
    if (!alive[left] || right < 0 || s.id[left] != c.left || s.id[right] != c.right) continue;  // stale
    s.id[left] = c.merged;
    alive[right] = 0;
    s.next[left] = s.next[right];
    if (s.next[right] >= 0) s.prev[s.next[right]] = left;
    consider(s.prev[left]);
    consider(left);
  }
  for (int32_t i = 0; i >= 0; i = s.next[i]) ids.push_back(s.id[i]);
}

}  // namespace shapelaw
