#include "text/tokenizer.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <mutex>

namespace inferprof::text {

namespace {

constexpr const char* kShim = "libinferprof_spm.so";

struct Shim {
  void* (*load)(const char*, char*, std::size_t) = nullptr;
  void (*free)(void*) = nullptr;
  long (*encode)(void*, const char*, std::size_t, int*, std::size_t, char*, std::size_t) = nullptr;
  int (*pad_id)(void*) = nullptr;
  int (*vocab_size)(void*) = nullptr;
  std::string error;  // why it could not be loaded
};

// The shim sits next to the module holding this code (the plugin, a test or
// bench binary in the build folder's subfolders), or on the library path.
std::vector<std::string> shim_candidates() {
  std::vector<std::string> out;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&shim_candidates), &info) != 0 && info.dli_fname != nullptr) {
    std::string dir = info.dli_fname;
    dir = dir.substr(0, dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/'));
    if (!dir.empty()) {
      out.push_back(dir + "/" + kShim);
      out.push_back(dir + "/../" + kShim);
    }
  }
  out.emplace_back(kShim);
  return out;
}

const Shim& shim() {
  static Shim s;
  static std::once_flag once;
  std::call_once(once, [] {
#ifdef INFERPROF_SANITIZED
    // ASan's dlopen aborts the process on RTLD_DEEPBIND, and without it
    // SentencePiece's protobuf would bind to libtorch's: say so instead.
    s.error = "text tokenization is not available in a sanitizer build (ASan refuses RTLD_DEEPBIND)";
    return;
#endif
    void* handle = nullptr;
    for (const std::string& path : shim_candidates()) {
      // DEEPBIND: SentencePiece binds to the protobuf it carries, not libtorch's.
      handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (handle != nullptr) break;
      const char* why = ::dlerror();
      if (s.error.empty() && why != nullptr) s.error = why;
    }
    if (handle == nullptr) {
      s.error = "cannot load " + std::string(kShim) + " (" + s.error + ")";
      return;
    }
    s.load = reinterpret_cast<decltype(s.load)>(::dlsym(handle, "inferprof_spm_load"));
    s.free = reinterpret_cast<decltype(s.free)>(::dlsym(handle, "inferprof_spm_free"));
    s.encode = reinterpret_cast<decltype(s.encode)>(::dlsym(handle, "inferprof_spm_encode"));
    s.pad_id = reinterpret_cast<decltype(s.pad_id)>(::dlsym(handle, "inferprof_spm_pad_id"));
    s.vocab_size = reinterpret_cast<decltype(s.vocab_size)>(::dlsym(handle, "inferprof_spm_vocab_size"));
    if (!s.load || !s.free || !s.encode || !s.pad_id || !s.vocab_size) {
      s.load = nullptr;
      s.error = std::string(kShim) + " lacks its entry points (a stale build?)";
    }
  });
  return s;
}

}  // namespace

struct Tokenizer::Impl {
  void* handle = nullptr;
  ~Impl() {
    if (handle) shim().free(handle);
  }
};

Tokenizer::Tokenizer(const std::string& model_path) : impl_(std::make_unique<Impl>()) {
  const Shim& s = shim();
  if (!s.load) throw TokenizerError{s.error};
  // SentencePiece would wait on a FIFO for ever and call a folder an internal error.
  struct stat st {};
  if (::stat(model_path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) throw TokenizerError{"not a regular file"};
  char err[512] = {};
  impl_->handle = s.load(model_path.c_str(), err, sizeof err);
  if (!impl_->handle) throw TokenizerError{"not a SentencePiece model (" + std::string(err) + ")"};
}

Tokenizer::~Tokenizer() = default;

void Tokenizer::encode(std::string_view text, std::vector<int>& ids) const {
  char err[512] = {};
  ids.resize(std::max<std::size_t>(ids.capacity(), 64));
  for (;;) {
    const long n = shim().encode(impl_->handle, text.data(), text.size(), ids.data(), ids.size(), err, sizeof err);
    if (n < 0) throw TokenizerError{"cannot tokenise: " + std::string(err)};
    const auto count = static_cast<std::size_t>(n);
    if (count <= ids.size()) {
      ids.resize(count);
      return;
    }
    ids.resize(count);  // room for all: the second call copies every id
  }
}

int Tokenizer::vocab_size() const {
  return shim().vocab_size(impl_->handle);
}

int Tokenizer::pad_id() const {
  return shim().pad_id(impl_->handle);
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
