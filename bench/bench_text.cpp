// Tokenisation throughput: the text module's SentencePiece wrapper (what the
// tokenize op calls), the whole tokenize op (encode + fit to max_length + the
// ids and mask tensors), and Debian's spm_encode on the same model and lines
// (its process start and model load measured on an empty input and taken off).
// A tiny model is trained here with spm_train, as the tests do.
//
//   build/bench_text [LINES] [RUNS]     (defaults 20000 lines, 5 runs; prints the best run)
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "inferprof/profile.hpp"
#include "pipeline/torch_detail.hpp"
#include "spm_model.hpp"
#include "temp_dir.hpp"
#include "text/tokenizer.hpp"

using namespace inferprof;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

double shell_seconds(const std::string& cmd) {
  const auto t0 = Clock::now();
  if (std::system(cmd.c_str()) != 0) {
    fmt::print(stderr, "failed: {}\n", cmd);
    std::exit(1);
  }
  return seconds_since(t0);
}

}  // namespace

int main(int argc, char** argv) {
  const int lines = argc > 1 ? std::max(100, std::atoi(argv[1])) : 20000;
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  testing::TempDir dir;
  const std::string model = testing::train_spm_model(dir, "bench", 1000);
  if (model.empty() || !testing::have_tool("spm_encode")) {
    fmt::print(stderr, "bench_text needs spm_train and spm_encode (Debian package sentencepiece)\n");
    return 1;
  }
  const std::string corpus = testing::spm_corpus(lines);
  const std::string input = dir.write("lines.txt", corpus), empty = dir.write("empty.txt", "");
  std::vector<std::string> texts;
  for (std::size_t at = 0; at < corpus.size();) {
    const std::size_t nl = corpus.find('\n', at);
    texts.push_back(corpus.substr(at, nl - at));
    at = nl + 1;
  }

  text::Tokenizer tok(model);
  std::vector<int> ids;
  std::size_t tokens = 0;
  double lib_s = 1e9;
  for (int r = 0; r < runs; ++r) {
    tokens = 0;
    const auto t0 = Clock::now();
    for (const std::string& t : texts) {
      tok.encode(t, ids);
      tokens += ids.size();
    }
    lib_s = std::min(lib_s, seconds_since(t0));
  }

  // The op as a request runs it: max_length 128, ids and mask tensors, a span.
  at::set_num_threads(1);
  const Profile p = parse_profile(
      fmt::format("[[preprocess]]\nop = \"tokenize\"\nmodel = \"{}\"\nmax_length = 128\n", model), "bench.toml");
  inferprof::detail::Preprocessor pre(p.preprocess);
  std::vector<TraceRequest> requests(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    requests[i].input.kind = InputSpec::Kind::text;
    requests[i].input.text = texts[i];
  }
  double op_s = 1e9;
  for (int r = 0; r < runs; ++r) {
    RequestRecord record;
    const auto t0 = Clock::now();
    for (const TraceRequest& req : requests) {
      record.spans.clear();
      inferprof::detail::Inputs x;
      x.tensors.push_back(inferprof::detail::make_input(req, {}, DType::float32, ""));
      x.specs.push_back(&req.input);
      x = pre.run(std::move(x), req, record, -1);
    }
    op_s = std::min(op_s, seconds_since(t0));
  }

  const std::string cmd = "spm_encode --model=" + model + " --output_format=id < ";
  double start_s = 1e9, spm_s = 1e9;
  for (int r = 0; r < runs; ++r) {
    start_s = std::min(start_s, shell_seconds(cmd + empty + " > /dev/null"));
    spm_s = std::min(spm_s, shell_seconds(cmd + input + " > " + dir.file("ids.txt")));
  }
  const auto spm = testing::spm_encode_ids(dir, model, corpus);
  std::size_t spm_tokens = 0;
  for (const auto& v : spm)
    spm_tokens += v.size();

  fmt::print("{} lines, {} tokens (spm_encode: {}), model of {} pieces, best of {} runs\n", texts.size(), tokens,
             spm_tokens, tok.vocab_size(), runs);
  fmt::print("{:<42} {:>10} {:>14} {:>12}\n", "", "seconds", "tokens/s", "us/text");
  const auto row = [&](const char* name, double s) {
    fmt::print("{:<42} {:>10.4f} {:>14.0f} {:>12.2f}\n", name, s, static_cast<double>(tokens) / s,
               s * 1e6 / static_cast<double>(texts.size()));
  };
  row("text::Tokenizer::encode", lib_s);
  row("tokenize op (encode + fit 128 + tensors)", op_s);
  row("spm_encode (minus start-up)", std::max(spm_s - start_s, 1e-9));
  fmt::print("spm_encode start-up and model load: {:.4f} s\n", start_s);
  return tokens == spm_tokens ? 0 : 1;
}
