#include "text/tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <algorithm>

namespace inferprof::text {

struct Tokenizer::Impl {
  sentencepiece::SentencePieceProcessor sp;
};

Tokenizer::Tokenizer(const std::string& model_path) : impl_(std::make_unique<Impl>()) {
  const auto status = impl_->sp.Load(model_path);
  if (!status.ok()) throw TokenizerError{"not a SentencePiece model (" + status.ToString() + ")"};
}

Tokenizer::~Tokenizer() = default;

void Tokenizer::encode(std::string_view text, std::vector<int>& ids) const {
  ids.clear();
  const auto status = impl_->sp.Encode(text, &ids);
  if (!status.ok()) throw TokenizerError{"cannot tokenise: " + status.ToString()};
}

int Tokenizer::vocab_size() const {
  return impl_->sp.GetPieceSize();
}

int Tokenizer::pad_id() const {
  return impl_->sp.pad_id();
}

bool fit(const std::vector<int>& ids, std::size_t max_length, std::int64_t pad_id, std::int64_t* ids_out,
         std::int64_t* mask_out) {
  const std::size_t n = std::min(ids.size(), max_length);
  for (std::size_t i = 0; i < n; ++i) {
    ids_out[i] = ids[i];
    if (mask_out) mask_out[i] = 1;
  }
  for (std::size_t i = n; i < max_length; ++i) {
    ids_out[i] = pad_id;
    if (mask_out) mask_out[i] = 0;
  }
  return ids.size() > max_length;
}

}  // namespace inferprof::text
