// Records by device and inode, not by name: a file the user put where ours
// was (or a folder swapped for a link) is not ours, and stays.
#include "base/output_owner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <system_error>

#include "base/text.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

namespace inferprof::output {
namespace {

namespace fs = std::filesystem;

struct Entry {
  std::string path;
  dev_t dev = 0;
  ino_t ino = 0;
  // A file's change time and size as well: a freed inode is soon reused by the next file made there.
  timespec ctime{};
  off_t size = 0;
  bool dir = false;
};

// Never destroyed: a signal's cleanup may run while the process exits.
struct Registry {
  std::mutex mu;
  std::vector<Entry> created;  // oldest first
  std::set<std::string> temps, privates;
};
Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

// `path` is `root` or lies under it, as text (both as recorded: absolute).
bool at_or_under(const std::string& path, const std::string& root) {
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/' || root == "/";
}

// An absolute, lexically normal form (no symbolic link is resolved: a record
// names where we wrote, whatever a link there pointed at).
std::string absolute(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  if (ec) p = path;
  std::string s = p.lexically_normal().string();
  while (s.size() > 1 && s.back() == '/')
    s.pop_back();
  return s;
}

bool same_inode(const std::string& path, const Entry& e) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0 || st.st_dev != e.dev || st.st_ino != e.ino || S_ISDIR(st.st_mode) != e.dir)
    return false;
  // A folder's change time moves with every entry added; an empty one is all rmdir removes anyway.
  return e.dir ||
         (st.st_ctim.tv_sec == e.ctime.tv_sec && st.st_ctim.tv_nsec == e.ctime.tv_nsec && st.st_size == e.size);
}

// Removes one recorded entry if it is still ours. Never recursive.
bool remove_entry(const Entry& e) noexcept {
  if (!same_inode(e.path, e)) return false;
  return (e.dir ? ::rmdir(e.path.c_str()) : ::unlink(e.path.c_str())) == 0;
}

Error cannot_use_dir(const std::string& dir, const std::string& why) {
  return bad_input(fmt::format("cannot write reports to '{}': {}", printable(dir), why));
}

std::uint64_t random64() {
  std::uint64_t v = 0;
  if (::getrandom(&v, sizeof v, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof v))
    v = static_cast<std::uint64_t>(::getpid()) * 0x9E3779B97F4A7C15ull ^ reinterpret_cast<std::uintptr_t>(&v);
  return v;
}

}  // namespace

// errno kept so that a path under a regular file reads "Not a directory"
// rather than std::filesystem's wording.
int make_dirs(const std::string& dir) noexcept {
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string prefix = dir.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (::mkdir(prefix.c_str(), 0777) == 0) {
      created(prefix);
      continue;
    }
    const int err = errno;
    struct stat st {};
    if (err == EEXIST && ::stat(prefix.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) continue;
      return ENOTDIR;
    }
    return err;
  }
  return 0;
}

namespace {

// The identity of an existing path (following links); false when absent.
bool identity(const std::string& path, struct stat& st) {
  return ::stat(path.c_str(), &st) == 0;
}

// Whether `inner` is `outer` or lies inside it: walks inner's real parents up
// to the root comparing device and inode (no text comparison, so "d/" and
// "./d" and a link to d are one folder).
bool inside_or_same(const std::string& inner, const struct stat& outer) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(inner, ec), ec);
  if (ec) return false;
  for (;;) {
    struct stat st {};
    if (::stat(p.c_str(), &st) == 0 && st.st_dev == outer.st_dev && st.st_ino == outer.st_ino) return true;
    if (!p.has_relative_path()) return false;
    p = p.parent_path();
  }
}

}  // namespace

std::string safe_name(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 200)) {
    const auto u = static_cast<unsigned char>(c);
    out += (c == '/' || u < 0x20 || u == 0x7f) ? '_' : c;
  }
  if (out.find_first_not_of('.') == std::string::npos) out.insert(out.begin(), '_');  // "", ".", ".."
  return out;
}

void created(const std::string& path) noexcept {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return;
  try {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.created.push_back(Entry{absolute(path), st.st_dev, st.st_ino, st.st_ctim, st.st_size, S_ISDIR(st.st_mode)});
  } catch (...) {  // out of memory: the entry is not removed on failure, which is the safe side
  }
}

void moved(const std::string& from, const std::string& to) noexcept {
  try {
    const std::string a = absolute(from), b = absolute(to);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (Entry& e : r.created) {
      if (!at_or_under(e.path, a)) continue;
      e.path = b + e.path.substr(a.size());
      struct stat st {};
      // rename(2) moves the renamed entry's change time.
      if (e.path == b && ::lstat(b.c_str(), &st) == 0 && st.st_ino == e.ino) e.ctime = st.st_ctim;
    }
  } catch (...) {
  }
}

bool created_here(const std::string& path) {
  const std::string p = absolute(path);
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return std::any_of(r.created.begin(), r.created.end(),
                     [&](const Entry& e) { return e.path == p && same_inode(p, e); });
}

std::size_t remove_created(const std::string& path) noexcept {
  std::size_t removed = 0;
  try {
    const std::string root = absolute(path);
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    std::vector<Entry> kept;
    // Newest first: a folder's files go before the folder. What is gone or no longer ours is forgotten.
    for (auto it = r.created.rbegin(); it != r.created.rend(); ++it) {
      if (!at_or_under(it->path, root)) {
        kept.push_back(*it);
      } else if (remove_entry(*it)) {
        ++removed;
      } else if (same_inode(it->path, *it)) {
        kept.push_back(*it);  // still ours (a folder a user's file keeps): tried again by a later call
      }
    }
    std::reverse(kept.begin(), kept.end());
    r.created = std::move(kept);
  } catch (...) {
  }
  return removed;
}

void track_temp(const std::string& path) noexcept {
  try {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.temps.insert(path);
  } catch (...) {
  }
}
void forget_temp(const std::string& path) noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.temps.erase(path);
}

void discard_temp(int dir_fd, const std::string& at, const std::string& path) noexcept {
  ::unlinkat(dir_fd, at.c_str(), 0);
  forget_temp(path);
}

void track_private(const std::string& path) noexcept {
  created(path);
  try {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    r.privates.insert(absolute(path));
  } catch (...) {
  }
}

void remove_private(const std::string& path) noexcept {
  try {
    const std::string p = absolute(path);
    Registry& r = registry();
    std::unique_lock<std::mutex> lock(r.mu);
    if (r.privates.erase(p) == 0) return;
    const auto it =
        std::find_if(r.created.begin(), r.created.end(), [&](const Entry& e) { return e.path == p && e.dir; });
    if (it == r.created.end()) return;
    const Entry e = *it;
    r.created.erase(it);
    lock.unlock();
    // Still the folder made (a link put in its place is not it); remove_all
    // removes links inside it without following them.
    if (!same_inode(p, e)) return;
    std::error_code ec;
    fs::remove_all(p, ec);
  } catch (...) {
  }
}

void abandon_all() noexcept {
  Registry& r = registry();
  std::vector<std::string> privates;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    for (const std::string& t : r.temps)
      ::unlink(t.c_str());  // only ever a file this process created under an unguessable name (O_EXCL)
    r.temps.clear();
    privates.assign(r.privates.begin(), r.privates.end());
  }
  for (const std::string& p : privates)
    remove_private(p);
  remove_created("/");
}

void claim_dir(const std::string& dir) {
  if (dir.empty()) throw cannot_use_dir(dir, "no folder given");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw cannot_use_dir(dir, std::strerror(ENOTDIR));
  } else if (const int err = make_dirs(dir); err != 0) {
    throw cannot_use_dir(dir, std::strerror(err));
  }
  // Creating the folder proves little (it may exist read-only); a probe file
  // shows that the reports can be written before any work is done. Created
  // new under an unguessable name: a link planted there redirects nothing.
  const std::string probe = report::join_path(dir, fmt::format(".inferprof-probe.{}.{:016x}", ::getpid(), random64()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw cannot_use_dir(dir, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

std::string claim_child_dir(const std::string& parent, const std::string& name) {
  if (name != safe_name(name)) throw bad_input(fmt::format("'{}' is not a plain folder name", printable(name)));
  const std::string path = report::join_path(parent, name);
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
    throw cannot_use_dir(path, "it exists and is not a folder (a symbolic link is not followed)");
  claim_dir(path);
  return path;
}

std::string unlisted_entry(const std::string& dir, const std::vector<std::string>& keep,
                           const std::vector<Listed>& listed, const std::string& ours) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!ours.empty() && name == ours && created_here(it->path().string())) continue;
    const bool regular = it->is_regular_file(ec) && !it->is_symlink(ec);
    if (regular && std::find(keep.begin(), keep.end(), name) != keep.end()) continue;
    const auto folder = std::find_if(listed.begin(), listed.end(), [&](const Listed& l) { return l.folder == name; });
    if (folder == listed.end() || it->is_symlink(ec) || !it->is_directory(ec)) return name;
    for (fs::directory_iterator in(it->path(), ec); !ec && in != end; in.increment(ec)) {
      const std::string file = in->path().filename().string();
      const bool named = std::find(folder->files.begin(), folder->files.end(), file) != folder->files.end();
      if (!named || in->is_symlink(ec) || !in->is_regular_file(ec)) return name + "/" + file;
    }
  }
  if (ec) return fmt::format("(cannot list it: {})", ec.message());
  return "";
}

void remove_listed(const std::string& dir, const std::vector<Listed>& listed) {
  for (const Listed& l : listed) {
    const std::string folder = report::join_path(dir, l.folder);
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0) continue;  // listed, but gone already
    if (!S_ISDIR(st.st_mode))
      throw runtime_failure(fmt::format("'{}' is no longer a folder: left as it is", printable(folder)));
    for (const std::string& name : l.files) {
      const std::string file = report::join_path(folder, name);
      if (::lstat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode)) ::unlink(file.c_str());
    }
    if (::rmdir(folder.c_str()) != 0)
      throw runtime_failure(fmt::format("cannot replace '{}' ({}): it holds files an earlier dump did not write",
                                        printable(folder), std::strerror(errno)));
  }
}

void check_distinct(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs,
                    const std::vector<std::pair<std::string, std::string>>& same_ok) {
  auto may_share = [&](const std::string& a, const std::string& b) {
    return std::any_of(same_ok.begin(), same_ok.end(), [&](const auto& p) {
      return (p.first == a && p.second == b) || (p.first == b && p.second == a);
    });
  };
  auto name = [](const NamedPath& p) { return fmt::format("{} '{}'", p.what, printable(p.path)); };
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const NamedPath& a = outputs[i];
    if (a.path.empty()) continue;
    struct stat sa {};
    const bool a_exists = identity(a.path, sa);
    for (std::size_t j = 0; j < outputs.size(); ++j) {
      const NamedPath& b = outputs[j];
      if (i == j || b.path.empty()) continue;
      struct stat sb {};
      const bool same = a_exists && identity(b.path, sb) ? sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino
                                                         : absolute(a.path) == absolute(b.path);
      if (same) {
        if (i < j && !may_share(a.what, b.what))
          throw bad_input(fmt::format("{} and {} are one folder: give each its own", name(a), name(b)));
        continue;
      }
      // b inside a (whether b exists yet or not).
      if (a_exists ? inside_or_same(b.path, sa) : at_or_under(absolute(b.path), absolute(a.path)))
        throw bad_input(fmt::format("{} lies inside {}: give each a folder of its own", name(b), name(a)));
    }
    for (const NamedPath& in : inputs) {
      struct stat si {};
      if (in.path.empty() || !identity(in.path, si)) continue;
      if (inside_or_same(a.path, si))
        throw bad_input(
            fmt::format("{} is {}{}: inferprof never writes over what it reads", name(a), name(in),
                        a_exists && sa.st_dev == si.st_dev && sa.st_ino == si.st_ino ? "" : " or inside it"));
    }
  }
}

void reset_for_tests() noexcept {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.created.clear();
  r.temps.clear();
  r.privates.clear();
}

}  // namespace inferprof::output
