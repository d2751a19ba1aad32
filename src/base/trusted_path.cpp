// A library planted in a folder others can write (a binary unpacked under
// /tmp, say) would run its constructors in our process on dlopen.
#include "base/trusted_path.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>

namespace inferprof {

std::string untrusted_reason(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> real(::realpath(path.c_str(), nullptr), &std::free);
  if (!real) return fmt::format("'{}' cannot be resolved", path);
  std::string p = real.get();
  const uid_t me = ::geteuid();
  for (bool file = true;; file = false) {
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return fmt::format("'{}' cannot be read", p);
    if (file && !S_ISREG(st.st_mode)) return fmt::format("'{}' is not a regular file", p);
    if (st.st_uid != 0 && st.st_uid != me) return fmt::format("'{}' belongs to another user (uid {})", p, st.st_uid);
    // Group-writable is fine for this user's own group or root's (a umask of 002 with a group per user).
    const bool group_foreign = st.st_gid != 0 && st.st_gid != ::getegid();
    const bool others_write = (st.st_mode & S_IWOTH) != 0 || ((st.st_mode & S_IWGRP) != 0 && group_foreign);
    const bool sticky_folder = !file && (st.st_mode & S_ISVTX) != 0;
    if (others_write && !sticky_folder) return fmt::format("'{}' is writable by other users", p);
    if (p == "/") return "";
    const std::size_t slash = p.rfind('/');
    p = slash == 0 ? "/" : p.substr(0, slash);
  }
}

}  // namespace inferprof
