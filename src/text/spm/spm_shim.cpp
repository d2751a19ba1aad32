// libinferprof_spm.so: the only code that links SentencePiece. Debian's
// libsentencepiece carries its own copy of protobuf-lite and exports it; in a
// process that also holds libtorch's libprotobuf the two interpose on each
// other (a crash while the plugin loads). So this library is loaded on first
// use with RTLD_LOCAL | RTLD_DEEPBIND (text/tokenizer.cpp): SentencePiece
// binds to its own protobuf, libtorch keeps its own, and only this C
// interface crosses.
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace {

void set_error(const std::string& what, char* err, std::size_t err_len) {
  if (err == nullptr || err_len == 0) return;
  const std::size_t n = std::min(what.size(), err_len - 1);
  std::memcpy(err, what.data(), n);
  err[n] = '\0';
}

}  // namespace

extern "C" {

// A model from its serialized bytes: the caller read the file (a regular
// file, its size checked first), so SentencePiece opens nothing itself.
__attribute__((visibility("default"))) void* inferprof_spm_load_bytes(const char* data, std::size_t len, char* err,
                                                                      std::size_t err_len) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  const auto status = sp->LoadFromSerializedProto(std::string_view(data, len));
  if (!status.ok()) {
    set_error(status.ToString(), err, err_len);
    delete sp;
    return nullptr;
  }
  return sp;
}

__attribute__((visibility("default"))) void inferprof_spm_free(void* handle) {
  delete static_cast<sentencepiece::SentencePieceProcessor*>(handle);
}

// The ids of `text`, as spm_encode prints them: their count (copied into
// `ids` up to `cap`; call again with room for all when it is larger), or -1.
__attribute__((visibility("default"))) long inferprof_spm_encode(void* handle, const char* text, std::size_t len,
                                                                 int* ids, std::size_t cap, char* err,
                                                                 std::size_t err_len) {
  thread_local std::vector<int> out;
  const auto status =
      static_cast<sentencepiece::SentencePieceProcessor*>(handle)->Encode(std::string_view(text, len), &out);
  if (!status.ok()) {
    set_error(status.ToString(), err, err_len);
    return -1;
  }
  std::copy_n(out.begin(), std::min(out.size(), cap), ids);
  return static_cast<long>(out.size());
}

__attribute__((visibility("default"))) int inferprof_spm_pad_id(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->pad_id();
}

__attribute__((visibility("default"))) int inferprof_spm_vocab_size(void* handle) {
  return static_cast<sentencepiece::SentencePieceProcessor*>(handle)->GetPieceSize();
}

}  // extern "C"
