#pragma once
// A tiny SentencePiece model trained at test time with Debian's spm_train
// (package sentencepiece), and spm_encode as the reference tokenizer: no
// binary model is checked in. Both return "" / nothing when the tool is missing.
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "temp_dir.hpp"

namespace inferprof::testing {

inline bool have_tool(const std::string& name) {
  return std::system(("command -v " + name + " >/dev/null 2>&1").c_str()) == 0;
}

// Sentences over a small vocabulary, the same every time.
inline std::string spm_corpus(int lines = 400) {
  static const char* words[] = {"the",   "model",   "serves", "a",       "request", "cache", "hit",   "miss",
                                "text",  "token",   "image",  "latency", "fast",    "slow",  "input", "output",
                                "queue", "profile", "trace",  "replay",  "tensor",  "layer", "batch", "user"};
  std::string out;
  std::uint64_t x = 12345;
  for (int i = 0; i < lines; ++i) {
    const int n = 4 + i % 9;
    for (int w = 0; w < n; ++w) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      out += words[(x >> 33) % (sizeof(words) / sizeof(words[0]))];
      out += w + 1 < n ? " " : ".\n";
    }
  }
  return out;
}

// Trains DIR/PREFIX.model (unigram, `vocab` pieces); returns its path, or ""
// when spm_train is not installed.
inline std::string train_spm_model(const TempDir& dir, const std::string& prefix = "tok", int vocab = 120) {
  if (!have_tool("spm_train")) return "";
  const std::string corpus = dir.write(prefix + "-corpus.txt", spm_corpus());
  const std::string cmd = "spm_train --input=" + corpus + " --model_prefix=" + dir.file(prefix) +
                          " --vocab_size=" + std::to_string(vocab) +
                          " --hard_vocab_limit=false --pad_id=3 --minloglevel=2 >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("spm_train failed: " + cmd);
  return dir.file(prefix + ".model");
}

// spm_encode's ids for each line of `text` (nothing when spm_encode is missing).
inline std::vector<std::vector<int>> spm_encode_ids(const TempDir& dir, const std::string& model,
                                                    const std::string& text) {
  std::vector<std::vector<int>> out;
  if (!have_tool("spm_encode")) return out;
  const std::string in = dir.write("spm-in.txt", text), ids = dir.file("spm-out.txt");
  const std::string cmd = "spm_encode --model=" + model + " --output_format=id < " + in + " > " + ids;
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("spm_encode failed: " + cmd);
  std::ifstream f(ids);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream words(line);
    out.emplace_back();
    for (int id = 0; words >> id;)
      out.back().push_back(id);
  }
  return out;
}

}  // namespace inferprof::testing
