// Shard read benchmark, side by side with the peer format (a raw uint16 token file
// read with pread, as nanoGPT/llm.c store tokens), on one core:
//   sequential: whole split, decompress + CRC-32C + widen, tokens/s
//   random:     latency of isolated random windows (a different frame each time)
// Usage: bench_shard_read SHARD_DIR [WINDOW=1024] [SAMPLES=2000] [PASSES=20]
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "shards/dataset.h"
#include "util/tool_main.h"

using namespace shapelaw;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Latency { double median_us, p90_us, p99_us; };
Latency summarize(std::vector<double>& us) {
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 9 / 10], us[us.size() * 99 / 100]};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: bench_shard_read SHARD_DIR [WINDOW] [SAMPLES] [PASSES]\n");
    return 2;
  }
  return tool_main("bench_shard_read", [&] {
    const std::string dir = argv[1];
    const size_t window = argc > 2 ? std::stoul(argv[2]) : 1024;
    const int samples = argc > 3 ? std::stoi(argv[3]) : 2000;
    const int passes = argc > 4 ? std::stoi(argv[4]) : 20;
    auto dataset = TokenDataset::open(dir);
    const auto& split = dataset.split("train");
    const uint64_t n = split.num_tokens();

    // The peer: the same tokens as a raw uint16 file.
    std::string raw_path = dir + "/bench-raw-uint16.bin";
    {
      std::vector<uint32_t> all = split.read(0, n);
      std::vector<uint16_t> narrow(all.begin(), all.end());
      FILE* f = std::fopen(raw_path.c_str(), "wb");
      std::fwrite(narrow.data(), 2, narrow.size(), f);
      std::fclose(f);
    }
    int raw_fd = ::open(raw_path.c_str(), O_RDONLY);

    // Sequential, 1M-token chunks, several passes.
    std::vector<uint32_t> chunk(1 << 20);
    std::vector<uint16_t> raw_chunk(1 << 20);
    uint64_t checksum = 0;
    auto t0 = Clock::now();
    for (int p = 0; p < passes; ++p)
      for (uint64_t off = 0; off < n; off += chunk.size()) {
        size_t count = std::min<uint64_t>(chunk.size(), n - off);
        split.read(off, count, chunk.data());
        checksum += chunk[count / 2];
      }
    double shard_seq = double(n) * passes / seconds_since(t0);
    t0 = Clock::now();
    for (int p = 0; p < passes; ++p)
      for (uint64_t off = 0; off < n; off += raw_chunk.size()) {
        size_t count = std::min<uint64_t>(raw_chunk.size(), n - off);
        if (::pread(raw_fd, raw_chunk.data(), count * 2, off * 2) < 0) return 1;
        for (size_t i = 0; i < count; ++i) chunk[i] = raw_chunk[i];  // widen, as the trainer needs
        checksum += chunk[count / 2];
      }
    double raw_seq = double(n) * passes / seconds_since(t0);

    // Random isolated windows: offsets chosen so consecutive reads hit other frames.
    std::mt19937_64 rng(1);
    std::vector<double> shard_us, raw_us;
    std::vector<uint32_t> out(window);
    std::vector<uint16_t> raw_out(window);
    for (int i = 0; i < samples; ++i) {
      uint64_t off = rng() % (n - window);
      auto t = Clock::now();
      split.read(off, window, out.data());
      shard_us.push_back(seconds_since(t) * 1e6);
      t = Clock::now();
      if (::pread(raw_fd, raw_out.data(), window * 2, off * 2) < 0) return 1;
      for (size_t k = 0; k < window; ++k) out[k] = raw_out[k];
      raw_us.push_back(seconds_since(t) * 1e6);
      checksum += out[0];
    }
    ::close(raw_fd);
    std::remove(raw_path.c_str());
    Latency s = summarize(shard_us), r = summarize(raw_us);
    std::printf("tokens in split:              %llu (%d passes)\n", (unsigned long long)n, passes);
    std::printf("sequential, shapelaw shards:  %.1f M tokens/s (decompress + CRC-32C + widen)\n", shard_seq / 1e6);
    std::printf("sequential, raw uint16 file:  %.1f M tokens/s (pread + widen)   ratio shards/raw = %.2f\n",
                raw_seq / 1e6, shard_seq / raw_seq);
    std::printf("random %zu-token window, shards: median %.1f us, p90 %.1f us, p99 %.1f us\n", window,
                s.median_us, s.p90_us, s.p99_us);
    std::printf("random %zu-token window, raw:    median %.1f us, p90 %.1f us, p99 %.1f us   ratio %.2f\n", window,
                r.median_us, r.p90_us, r.p99_us, s.median_us / r.median_us);
    std::fprintf(stderr, "(checksum %llu)\n", (unsigned long long)checksum);
    return 0;
  });
}
