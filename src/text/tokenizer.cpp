#include "text/tokenizer.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "base/read_file.hpp"
#include "base/trusted_path.hpp"
#include "inferprof/error.hpp"

namespace inferprof::text {

namespace {

constexpr const char* kShim = "libinferprof_spm.so";

struct Shim {
  void* (*load_bytes)(const char*, std::size_t, char*, std::size_t) = nullptr;
  void (*free)(void*) = nullptr;
  long (*encode)(void*, const char*, std::size_t, int*, std::size_t, char*, std::size_t) = nullptr;
  int (*pad_id)(void*) = nullptr;
  int (*vocab_size)(void*) = nullptr;
  std::string error;  // why it could not be loaded
};

// The shim sits next to the module holding this code (the plugin; the unit
// test binary, which links the plugin's code, has a link to it beside it), by
// the path the module was loaded from and by its real one (an installed plugin
// may be a link). Never a folder above: for a binary one level below a folder
// others can write, that folder is theirs. Only absolute paths: a bare name
// would be searched on LD_LIBRARY_PATH, where an empty entry is the working
// directory.
std::vector<std::string> shim_candidates() {
  std::vector<std::string> out;
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&shim_candidates), &info) == 0 || info.dli_fname == nullptr) return out;
  std::vector<std::string> modules = {info.dli_fname};
  if (char* real = ::realpath(info.dli_fname, nullptr)) {
    modules.emplace_back(real);
    std::free(real);
  }
  for (const std::string& module : modules) {
    const std::size_t slash = module.rfind('/');
    if (module.empty() || module[0] != '/' || slash == std::string::npos) continue;
    const std::string dir = module.substr(0, slash);
    const std::string path = dir + "/" + kShim;
    if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
  }
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
    const std::vector<std::string> candidates = shim_candidates();
    for (const std::string& path : candidates) {
      struct stat st {};
      if (::stat(path.c_str(), &st) != 0) continue;
      if (const std::string why = untrusted_reason(path); !why.empty()) {
        if (s.error.empty()) s.error = "refused: " + why;
        continue;
      }
      // DEEPBIND: SentencePiece binds to the protobuf it carries, not libtorch's.
      handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
      if (handle != nullptr) break;
      const char* why = ::dlerror();
      if (s.error.empty() && why != nullptr) s.error = why;
    }
    if (handle == nullptr) {
      if (s.error.empty()) {  // none of the candidates is there
        s.error = "not in";
        for (const std::string& path : candidates)
          s.error += (&path == &candidates.front() ? " " : ", ") + path;
      }
      s.error = "cannot load " + std::string(kShim) + " (" + s.error + ")";
      return;
    }
    s.load_bytes = reinterpret_cast<decltype(s.load_bytes)>(::dlsym(handle, "inferprof_spm_load_bytes"));
    s.free = reinterpret_cast<decltype(s.free)>(::dlsym(handle, "inferprof_spm_free"));
    s.encode = reinterpret_cast<decltype(s.encode)>(::dlsym(handle, "inferprof_spm_encode"));
    s.pad_id = reinterpret_cast<decltype(s.pad_id)>(::dlsym(handle, "inferprof_spm_pad_id"));
    s.vocab_size = reinterpret_cast<decltype(s.vocab_size)>(::dlsym(handle, "inferprof_spm_vocab_size"));
    if (!s.load_bytes || !s.free || !s.encode || !s.pad_id || !s.vocab_size) {
      s.load_bytes = nullptr;
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
  if (!s.load_bytes) throw TokenizerError{s.error};
  // Read here, a regular file of a bounded size: SentencePiece would wait on a
  // FIFO for ever, read /dev/zero without end and call a folder an internal error.
  std::optional<std::string> bytes;
  try {
    bytes = report::read_regular_file(model_path, kMaxModelBytes);
  } catch (const Error& e) {
    // "PATH: why": the caller names the model already.
    const std::string_view what = e.what();
    const std::string lead = model_path + ": ";
    throw TokenizerError{std::string(what.substr(what.compare(0, lead.size(), lead) == 0 ? lead.size() : 0))};
  }
  if (!bytes) throw TokenizerError{"no such file"};
  char err[512] = {};
  impl_->handle = s.load_bytes(bytes->data(), bytes->size(), err, sizeof err);
  if (!impl_->handle) throw TokenizerError{"not a SentencePiece model (" + std::string(err) + ")"};
}

Tokenizer::~Tokenizer() = default;

void Tokenizer::encode_whole(std::string_view text, std::vector<int>& ids) const {
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

namespace {

// Where to cut `text` near `at` (< text.size()): before a space, tab or
// newline in the last quarter (SentencePiece's pieces do not cross
// whitespace, so the words before it are cut as in the whole text), else at
// the start of a UTF-8 character.
std::size_t cut_point(std::string_view text, std::size_t at) {
  for (std::size_t i = at; i > at - at / 4; --i)
    if (text[i] == ' ' || text[i] == '\n' || text[i] == '\t') return i;
  while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
    --at;
  return at;
}

}  // namespace

void Tokenizer::encode(std::string_view text, std::vector<int>& ids, std::size_t max_ids) const {
  // A prefix whose ids reach max_ids + 1 (the caller still sees that the text
  // was longer) plus a margin: the last ids of a prefix may differ from the
  // whole text's where it is cut, and are dropped. Longer prefixes until one
  // does, or the whole text.
  constexpr std::size_t kMargin = 16, kBytesPerId = 8;
  const std::size_t want = max_ids >= text.size() ? text.size() : max_ids + 1 + kMargin;
  for (std::size_t prefix = want * kBytesPerId; prefix < text.size() && prefix >= want; prefix *= 2) {
    encode_whole(text.substr(0, cut_point(text, prefix)), ids);
    if (ids.size() >= want) {
      ids.resize(ids.size() - kMargin);
      return;
    }
  }
  encode_whole(text, ids);
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
