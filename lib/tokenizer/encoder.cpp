#include "tokenizer/encoder.h"

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include "shards/token_stream.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"
#include "util/progress.h"

namespace shapelaw {

namespace {

struct Batch {
  uint64_t sequence = 0;
  std::vector<std::string> texts;
  uint64_t text_bytes = 0;
  std::vector<uint32_t> tokens;  // filled by a worker: documents each ending in EOS
};

}  // namespace

TokenizerInfo describe_tokenizer(const std::string& model_path) { return load_tokenizer(model_path)->info(); }

EncodeResult encode_documents(const std::string& model_path, const std::vector<std::string>& inputs,
                              const std::string& output_path, const EncodeOptions& options) {
  const std::unique_ptr<Tokenizer> tokenizer = load_tokenizer(model_path);
  const TokenizerInfo& info = tokenizer->info();
  const int workers = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const size_t max_in_flight = size_t(workers) * 2 + 2;

  DocumentReader reader(inputs, options.reader);
  TokenStreamWriter writer(output_path, info);
  Progress progress("tokenize encode", options.quiet);

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Batch> todo;
  std::map<uint64_t, Batch> done;
  uint64_t batches_read = 0;
  size_t in_flight = 0;
  bool reading_finished = false, failed = false;
  std::exception_ptr error;
  std::atomic<uint64_t> raw_bytes_read{0};  // the reader is not thread-safe; progress reads this

  auto fail = [&](std::exception_ptr e) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!error) error = e;
    failed = true;
    changed.notify_all();
  };

  std::thread read_thread([&] {
    try {
      Batch batch;
      Document document;
      auto push = [&] {
        std::unique_lock<std::mutex> lock(mutex);
        changed.wait(lock, [&] { return in_flight < max_in_flight || failed; });
        if (failed) return false;
        batch.sequence = batches_read++;
        ++in_flight;
        todo.push_back(std::move(batch));
        batch = Batch();
        changed.notify_all();
        return true;
      };
      while (reader.next(document)) {
        batch.text_bytes += document.text.size();
        batch.texts.push_back(std::move(document.text));
        raw_bytes_read = reader.raw_bytes_read();
        if (batch.text_bytes >= options.batch_bytes && !push()) return;
      }
      if (!batch.texts.empty() && !push()) return;
      std::lock_guard<std::mutex> lock(mutex);
      reading_finished = true;
      changed.notify_all();
    } catch (...) {
      fail(std::current_exception());
    }
  });

  std::vector<std::thread> pool;
  for (int w = 0; w < workers; ++w) {
    pool.emplace_back([&] {
      std::unique_ptr<TokenizerSession> session;
      try {
        session = tokenizer->session();
      } catch (...) {
        fail(std::current_exception());
        return;
      }
      for (;;) {
        Batch batch;
        {
          std::unique_lock<std::mutex> lock(mutex);
          changed.wait(lock, [&] { return !todo.empty() || reading_finished || failed; });
          if (failed || todo.empty()) return;
          batch = std::move(todo.front());
          todo.pop_front();
        }
        try {
          for (const auto& text : batch.texts) {
            session->encode(text, batch.tokens);
            batch.tokens.push_back(info.eos_id);
          }
        } catch (...) {
          fail(std::current_exception());
          return;
        }
        std::lock_guard<std::mutex> lock(mutex);
        done.emplace(batch.sequence, std::move(batch));
        changed.notify_all();
      }
    });
  }

  // This thread writes finished batches strictly in input order.
  EncodeResult result;
  uint64_t next_to_write = 0;
  for (;;) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mutex);
      changed.wait(lock, [&] {
        return failed || done.count(next_to_write) || (reading_finished && next_to_write == batches_read);
      });
      if (failed || !done.count(next_to_write)) break;
      batch = std::move(done.at(next_to_write));
      done.erase(next_to_write);
    }
    try {
      writer.write_block(batch.tokens, uint32_t(batch.texts.size()));
    } catch (...) {
      fail(std::current_exception());
      break;
    }
    result.documents += batch.texts.size();
    result.text_bytes += batch.text_bytes;
    {
      std::lock_guard<std::mutex> lock(mutex);
      --in_flight;
      ++next_to_write;
      changed.notify_all();
    }
    progress.update(raw_bytes_read, reader.total_raw_bytes(), result.documents, "documents");
  }
  read_thread.join();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
  writer.close();
  result.tokens = writer.tokens();
  result.skipped = reader.skipped();
  result.seconds = progress.elapsed_seconds();
  progress.finish(reader.raw_bytes_read(), result.documents, "documents");
  return result;
}

}  // namespace shapelaw
