// The file store: ROOT/name/version/model.pt + meta.json, and ROOT/index.json
// for listing over HTTP. Writes go through a temp file and a rename, the
// metadata after the model, so a reader sees a version whole or not at all.
#include <dirent.h>
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
#include <utility>

#include "base/atomic_file.hpp"
#include "base/read_file.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "store/store_detail.hpp"

namespace fs = std::filesystem;

namespace inferprof::store_detail {
namespace {

// A file descriptor, closed when it goes; -1 for none.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&&) = delete;
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_;
};

// The store's own folders are never symbolic links: `rm` would delete, and
// `put` write, wherever one points. Each is opened relative to its parent's
// descriptor without following a link (O_NOFOLLOW), and the work done relative
// to it: a folder swapped for a link after it was opened redirects nothing.
// An empty Fd when `name` does not exist.
Fd open_folder(const std::string& url, int parent, const std::string& name, const fs::path& shown) {
  const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) return Fd(fd);
  const int err = errno;
  if (err == ENOENT) return Fd();
  struct stat st {};
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISLNK(st.st_mode))
      throw bad_input(fmt::format("{}: {} is a symbolic link; a store's model and version folders must be real folders",
                                  url, shown.string()));
    if (!S_ISDIR(st.st_mode)) throw bad_input(fmt::format("{}: {} is not a folder", url, shown.string()));
  }
  throw runtime_failure(fmt::format("{}: cannot open {}: {}", url, shown.string(), std::strerror(err)));
}

// open_folder, creating the folder first when it is missing.
Fd make_folder(const std::string& url, int parent, const std::string& name, const fs::path& shown) {
  if (::mkdirat(parent, name.c_str(), 0777) != 0 && errno != EEXIST)
    throw runtime_failure(fmt::format("{}: cannot create {}: {}", url, shown.string(), std::strerror(errno)));
  Fd fd = open_folder(url, parent, name, shown);
  if (!fd) throw runtime_failure(fmt::format("{}: cannot create {}: it went as it was made", url, shown.string()));
  return fd;
}

// Whether the folder open as `dir` holds an entry `name` (a link is not followed).
bool has_entry(int dir, const char* name) {
  struct stat st {};
  return ::fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

// Empties the folder open as `dir`, its sub-folders too; a symbolic link in it
// is removed, never followed.
void remove_contents(const std::string& url, int dir, const fs::path& shown) {
  std::vector<std::string> names;
  if (DIR* d = ::fdopendir(::dup(dir))) {  // fdopendir owns (and closedir closes) the copy
    ::rewinddir(d);
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
    ::closedir(d);
  }
  for (const std::string& name : names) {
    if (::unlinkat(dir, name.c_str(), 0) == 0 || errno == ENOENT) continue;
    int err = errno;
    if (err == EISDIR) {
      if (Fd sub = open_folder(url, dir, name, shown / name)) remove_contents(url, sub.get(), shown / name);
      if (::unlinkat(dir, name.c_str(), AT_REMOVEDIR) == 0) continue;
      err = errno;
    }
    throw runtime_failure(fmt::format("{}: cannot remove {}: {}", url, (shown / name).string(), std::strerror(err)));
  }
}

// Holds an exclusive lock on ROOT/.index.lock for a whole `store put` or `rm`:
// two puts of one version cannot both pass the "exists already" check, and
// index.json is rewritten from the folder listing one writer at a time, so
// that none writes a listing older than another's. Not re-entrant (flock is
// per open file): take it once per operation.
class IndexLock {
 public:
  IndexLock(const std::string& url, int root_fd, const fs::path& root) {
    const fs::path p = root / ".index.lock";
    fd_ = ::openat(root_fd, ".index.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
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
    std::optional<std::string> text = report::read_regular_file(p.string(), kMaxMetaBytes);
    if (!text) throw no_model(*this, r);
    return parse_meta_json(*text, p.string());
  }

  std::string fetch(const ModelRef& ref, std::uint64_t) override {  // a local file: its size is checked after
    ModelRef r = resolved(ref);
    fs::path dir = root_ / r.name / r.version;
    std::optional<std::string> bytes =
        report::read_regular_file((dir / "model.pt").string(), std::numeric_limits<std::uint64_t>::max());
    if (bytes) return std::move(*bytes);
    if (fs::exists(dir / "meta.json"))
      throw runtime_failure(
          fmt::format("{}: {}: model.pt is missing from {} (its meta.json is there)", url_, r.str(), dir.string()));
    throw no_model(*this, r);
  }

  // A meta.json that cannot be read or parsed is left out with a warning, as put and rm leave it out of index.json.
  std::vector<ModelMeta> list() override { return scan("the list"); }

  void put(const ModelRef& ref, std::string_view bytes) override {
    if (ref.version.empty())
      throw bad_input(fmt::format("{}: put needs NAME@VERSION, got '{}' (no version)", url_, ref.name));
    if (bytes.empty()) throw bad_input(fmt::format("{}: {}: the model is empty (0 bytes)", url_, ref.str()));
    std::error_code ec;
    fs::create_directories(root_, ec);  // the lock file lives in it
    const Fd root = open_root();
    if (!root) throw runtime_failure(fmt::format("{}: cannot create {}: {}", url_, root_.string(), ec.message()));
    IndexLock lock(url_, root.get(), root_);
    // Opened under the lock, without following links: the folder checked is the one written to.
    const fs::path dir = root_ / ref.name / ref.version;
    const Fd name_dir = make_folder(url_, root.get(), ref.name, root_ / ref.name);
    const Fd version_dir = make_folder(url_, name_dir.get(), ref.version, dir);
    if (has_entry(version_dir.get(), "meta.json"))
      throw bad_input(fmt::format(
          "{}: {} exists already (a version is immutable: put a new version, or rm this one first)", url_, ref.str()));
    ModelMeta m;
    m.name = ref.name;
    m.version = ref.version;
    m.size = bytes.size();
    m.sha256 = sha256_hex(bytes);
    m.created = utc_now_iso();
    report::write_file_atomic_at(version_dir.get(), dir.string(), "model.pt", bytes);
    report::write_file_atomic_at(version_dir.get(), dir.string(), "meta.json", meta_json(m));
    write_index(root.get());
  }

  bool remove(const ModelRef& ref) override {
    if (ref.version.empty())
      throw bad_input(fmt::format("{}: rm needs NAME@VERSION, got '{}' (no version)", url_, ref.name));
    const Fd root = open_root();
    if (!root) return false;
    IndexLock lock(url_, root.get(), root_);
    const fs::path dir = root_ / ref.name / ref.version;
    const Fd name_dir = open_folder(url_, root.get(), ref.name, root_ / ref.name);
    if (!name_dir) return false;
    const Fd version_dir = open_folder(url_, name_dir.get(), ref.version, dir);
    if (!version_dir || !has_entry(version_dir.get(), "meta.json")) return false;  // or another rm got there first
    // The metadata first: from then on readers see no version, not a broken one.
    if (::unlinkat(version_dir.get(), "meta.json", 0) != 0)
      throw runtime_failure(fmt::format("{}: cannot remove {}: {}", url_, dir.string(), std::strerror(errno)));
    remove_contents(url_, version_dir.get(), dir);
    if (::unlinkat(name_dir.get(), ref.version.c_str(), AT_REMOVEDIR) != 0)
      throw runtime_failure(fmt::format("{}: cannot remove {}: {}", url_, dir.string(), std::strerror(errno)));
    ::unlinkat(root.get(), ref.name.c_str(), AT_REMOVEDIR);  // fails, as it should, while other versions remain
    write_index(root.get());
    return true;
  }

 private:
  ModelRef resolved(const ModelRef& ref) {
    if (!ref.version.empty()) return ref;
    return ModelRef{ref.name, newest_version(*this, ref.name)};
  }

  // The root folder (a link to it is the user's choice, and followed); an
  // empty Fd when there is no such folder (`rm` then finds no model, and
  // no_model says why).
  Fd open_root() const {
    Fd fd(::open(root_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd && errno != ENOENT && errno != ENOTDIR)
      throw runtime_failure(fmt::format("{}: cannot open {}: {}", url_, root_.string(), std::strerror(errno)));
    return fd;
  }

  // Every version with a meta.json (without one: a put under way or
  // interrupted, not a version yet). A meta.json that cannot be read or
  // parsed is an error, or with `skip_bad` a warning naming it and left out:
  // rebuilding index.json after a put's or rm's work is done keeps the rest
  // true to the folders rather than failing with the work half-reported.
  // Every version's metadata; one that cannot be read (or an entry that cannot be looked at) is left out
  // of `left_out_of` ("index.json", "the list") with a warning naming it.
  std::vector<ModelMeta> scan(const char* left_out_of) {
    if (!is_folder(root_)) throw bad_input(fmt::format("{}: no such folder {}", url_, root_.string()));
    std::vector<ModelMeta> out;
    const auto guarded = [&](auto&& work) {
      try {
        work();
      } catch (const Error& e) {
        fmt::print(stderr, "inferprof: warning: {} (left out of {})\n", printable(e.what()), left_out_of);
      }
    };
    for (const fs::path& name : entries(root_))
      guarded([&] {
        if (!is_folder(name)) return;
        for (const fs::path& version : entries(name))
          guarded([&] {
            if (!is_folder(version)) return;
            const fs::path p = version / "meta.json";
            if (std::optional<std::string> text = report::read_regular_file(p.string(), kMaxMetaBytes))
              out.push_back(parse_meta_json(*text, p.string()));
          });
      });
    sort_metas(out);
    return out;
  }

  // Whether `p` is a folder (a link to one is followed); a link loop, or what
  // cannot be looked at, is bad input naming it; a missing `p` is no folder.
  bool is_folder(const fs::path& p) const {
    std::error_code ec;
    const fs::file_status st = fs::status(p, ec);
    const bool gone = ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory;
    if (ec && !gone) throw bad_input(fmt::format("{}: {}: {}", url_, p.string(), ec.message()));
    return fs::is_directory(st);
  }

  // What the folder `dir` holds.
  std::vector<fs::path> entries(const fs::path& dir) const {
    std::vector<fs::path> out;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
      out.push_back(it->path());
    if (ec) throw bad_input(fmt::format("{}: {}: cannot list it: {}", url_, dir.string(), ec.message()));
    return out;
  }

  // The caller holds the IndexLock.
  void write_index(int root_fd) {
    report::write_file_atomic_at(root_fd, root_.string(), "index.json", index_json(scan("index.json")));
  }

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
