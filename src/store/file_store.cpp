// The file store: ROOT/name/version/model.pt + meta.json, and ROOT/index.json
// for listing over HTTP. Writes go through a temp file and a rename, the
// metadata after the model, so a reader sees a version whole or not at all.
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>

#include "inferprof/error.hpp"
#include "inferprof/report.hpp"
#include "store/store_detail.hpp"

namespace fs = std::filesystem;

namespace inferprof::store_detail {
namespace {

// Metadata files are a few hundred bytes; more is not one of ours.
constexpr std::uint64_t kMaxMetaBytes = 1 << 20;

// nullopt when the file does not exist; throws Error(runtime) on other
// failures. Reads at most `max_bytes`, and only a regular file: a FIFO or a
// device in the store would otherwise be read without end.
std::optional<std::string> read_file(const fs::path& p, std::uint64_t max_bytes) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw runtime_failure(fmt::format("{}: cannot read: {}", p.string(), std::strerror(errno)));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw runtime_failure(fmt::format("{}: cannot read: {}", p.string(), std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw runtime_failure(fmt::format("{}: not a regular file", p.string()));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes)
    throw runtime_failure(fmt::format("{}: {} bytes, more than the {} expected", p.string(), size, max_bytes));
  std::string out(static_cast<std::size_t>(size), '\0');
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::read(fd, out.data() + done, out.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) throw runtime_failure(fmt::format("{}: cannot read all of it", p.string()));
    done += static_cast<std::size_t>(got);
  }
  return out;
}

// The store's own folders are never symbolic links: `rm` would delete, and
// `put` write, wherever one points.
void refuse_symlinks(const std::string& url, const fs::path& root, const ModelRef& ref) {
  for (const fs::path& p : {root / ref.name, root / ref.name / ref.version}) {
    std::error_code ec;
    const fs::file_status st = fs::symlink_status(p, ec);
    if (fs::is_symlink(st))
      throw bad_input(fmt::format("{}: {} is a symbolic link; a store's model and version folders must be real folders",
                                  url, p.string()));
    if (fs::exists(st) && !fs::is_directory(st))
      throw bad_input(fmt::format("{}: {} is not a folder", url, p.string()));
    if (!fs::exists(st)) break;
  }
}

// Holds an exclusive lock on ROOT/.index.lock for a whole `store put` or `rm`:
// two puts of one version cannot both pass the "exists already" check, and
// index.json is rewritten from the folder listing one writer at a time, so
// that none writes a listing older than another's. Not re-entrant (flock is
// per open file): take it once per operation.
class IndexLock {
 public:
  IndexLock(const std::string& url, const fs::path& root) {
    const fs::path p = root / ".index.lock";
    fd_ = ::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd_ < 0) throw runtime_failure(fmt::format("{}: cannot open {}: {}", url, p.string(), std::strerror(errno)));
    while (::flock(fd_, LOCK_EX) != 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd_);
      throw runtime_failure(fmt::format("{}: cannot lock {}: {}", url, p.string(), std::strerror(err)));
    }
  }
  ~IndexLock() { ::close(fd_); }  // closing releases the lock
  IndexLock(const IndexLock&) = delete;
  IndexLock& operator=(const IndexLock&) = delete;

 private:
  int fd_ = -1;
};

class FileStore final : public RemoteStore {
 public:
  FileStore(std::string url, fs::path root) : url_(std::move(url)), root_(std::move(root)) {}

  std::string url() const override { return url_; }

  ModelMeta meta(const ModelRef& ref) override {
    ModelRef r = resolved(ref);
    fs::path p = root_ / r.name / r.version / "meta.json";
    std::optional<std::string> text = read_file(p, kMaxMetaBytes);
    if (!text) throw no_model(*this, r);
    return parse_meta_json(*text, p.string());
  }

  std::string fetch(const ModelRef& ref) override {
    ModelRef r = resolved(ref);
    fs::path dir = root_ / r.name / r.version;
    std::optional<std::string> bytes = read_file(dir / "model.pt", std::numeric_limits<std::uint64_t>::max());
    if (bytes) return std::move(*bytes);
    if (fs::exists(dir / "meta.json"))
      throw runtime_failure(
          fmt::format("{}: {}: model.pt is missing from {} (its meta.json is there)", url_, r.str(), dir.string()));
    throw no_model(*this, r);
  }

  std::vector<ModelMeta> list() override {
    std::error_code ec;
    if (!fs::is_directory(root_, ec)) throw bad_input(fmt::format("{}: no such folder {}", url_, root_.string()));
    std::vector<ModelMeta> out;
    for (const fs::directory_entry& name : fs::directory_iterator(root_)) {
      if (!name.is_directory()) continue;
      for (const fs::directory_entry& version : fs::directory_iterator(name.path())) {
        if (!version.is_directory()) continue;
        fs::path p = version.path() / "meta.json";
        // No meta.json: a put under way or interrupted, not a version yet.
        if (std::optional<std::string> text = read_file(p, kMaxMetaBytes))
          out.push_back(parse_meta_json(*text, p.string()));
      }
    }
    sort_metas(out);
    return out;
  }

  void put(const ModelRef& ref, std::string_view bytes) override {
    if (ref.version.empty())
      throw bad_input(fmt::format("{}: put needs NAME@VERSION, got '{}' (no version)", url_, ref.name));
    if (bytes.empty()) throw bad_input(fmt::format("{}: {}: the model is empty (0 bytes)", url_, ref.str()));
    refuse_symlinks(url_, root_, ref);
    std::error_code ec;
    fs::create_directories(root_, ec);  // the lock file lives in it
    IndexLock lock(url_, root_);
    fs::path dir = root_ / ref.name / ref.version;
    if (fs::exists(dir / "meta.json"))
      throw bad_input(fmt::format(
          "{}: {} exists already (a version is immutable: put a new version, or rm this one first)", url_, ref.str()));
    fs::create_directories(dir, ec);
    if (ec) throw runtime_failure(fmt::format("{}: cannot create {}: {}", url_, dir.string(), ec.message()));
    ModelMeta m;
    m.name = ref.name;
    m.version = ref.version;
    m.size = bytes.size();
    m.sha256 = sha256_hex(bytes);
    m.created = utc_now_iso();
    write_file_atomic(dir.string(), "model.pt", std::string(bytes));
    write_file_atomic(dir.string(), "meta.json", meta_json(m));
    write_index();
  }

  bool remove(const ModelRef& ref) override {
    if (ref.version.empty())
      throw bad_input(fmt::format("{}: rm needs NAME@VERSION, got '{}' (no version)", url_, ref.name));
    refuse_symlinks(url_, root_, ref);
    fs::path dir = root_ / ref.name / ref.version;
    if (!fs::exists(dir / "meta.json")) return false;
    IndexLock lock(url_, root_);
    if (!fs::exists(dir / "meta.json")) return false;  // another rm got there first
    // The metadata first: from then on readers see no version, not a broken one.
    std::error_code ec;
    fs::remove(dir / "meta.json", ec);
    if (!ec) fs::remove_all(dir, ec);
    if (ec) throw runtime_failure(fmt::format("{}: cannot remove {}: {}", url_, dir.string(), ec.message()));
    if (fs::is_empty(root_ / ref.name, ec)) fs::remove(root_ / ref.name, ec);
    write_index();
    return true;
  }

 private:
  ModelRef resolved(const ModelRef& ref) {
    if (!ref.version.empty()) return ref;
    return ModelRef{ref.name, newest_version(*this, ref.name)};
  }
  // The caller holds the IndexLock.
  void write_index() { write_file_atomic(root_.string(), "index.json", index_json(list())); }

  std::string url_;
  fs::path root_;
};

}  // namespace

std::unique_ptr<RemoteStore> make_file_store(const std::string& url, const std::string& root) {
  if (root.empty())
    throw bad_input(fmt::format("store URL '{}': expected a folder, file:///path or http(s)://host/path", url));
  return std::make_unique<FileStore>(url, fs::path(root));
}

}  // namespace inferprof::store_detail

namespace inferprof {

std::unique_ptr<RemoteStore> open_remote_store(const std::string& url) {
  constexpr std::string_view kFile = "file://";
  std::string_view u(url);
  if (u.substr(0, 7) == "http://" || u.substr(0, 8) == "https://") return store_detail::make_http_store(url);
  if (u.substr(0, kFile.size()) == kFile) return store_detail::make_file_store(url, url.substr(kFile.size()));
  if (u.find("://") != std::string_view::npos)
    throw bad_input(
        fmt::format("store URL '{}': unsupported scheme; expected a folder, file:///path or http(s)://host/path", url));
  return store_detail::make_file_store(url, url);
}

}  // namespace inferprof
