#pragma once
// SentencePiece behind a small interface: the pipeline's `tokenize` op and the
// text bench use it; nothing else sees SentencePiece. No libtorch here.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof::text {

// Thrown for a model file that cannot be read or is not a SentencePiece
// model, and for text it cannot encode; the caller adds where.
struct TokenizerError {
  std::string what;
};

class Tokenizer {
 public:
  // Loads a SentencePiece .model file. Throws TokenizerError.
  explicit Tokenizer(const std::string& model_path);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // A SentencePiece model is a few MB (large vocabularies: 5 MB); more is not one.
  static constexpr std::uint64_t kMaxModelBytes = 64ull << 20;

  // The ids spm_encode --output_format=id prints for `text`. With `max_ids`,
  // only a prefix of a long text is tokenized: its ids start with the whole
  // text's first max_ids (at least max_ids + 1 of them when there are more),
  // so that a 10 MB text for 128 slots costs what a few KB do. Throws
  // TokenizerError.
  void encode(std::string_view text, std::vector<int>& ids, std::size_t max_ids = SIZE_MAX) const;
  int vocab_size() const;
  int pad_id() const;  // the model's pad id (-1 when it defines none)

 private:
  void encode_whole(std::string_view text, std::vector<int>& ids) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Fits `ids` into `max_length` slots: truncates (keeping the first ids) or
// pads with `pad_id`; mask[i] is 1 for a real token, 0 for padding. Returns
// whether it truncated.
bool fit(const std::vector<int>& ids, std::size_t max_length, std::int64_t pad_id, std::int64_t* ids_out,
         std::int64_t* mask_out);

}  // namespace inferprof::text
