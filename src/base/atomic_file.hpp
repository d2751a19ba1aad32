#pragma once
// Writing files atomically: under a temporary name, fsync, rename.
#include <fcntl.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/error.hpp"

namespace inferprof {

// Writes `content` to dir/name atomically (temp file + rename). Throws Error.
void write_file_atomic(const std::string& dir, const std::string& name, const std::string& content);

namespace report {

// "cannot write 'PATH': strerror(err)", exit code runtime.
Error write_error(const std::string& path, int err);
// write_file_atomic (above) in the folder open as `dir_fd`
// (AT_FDCWD: `dir` itself), named `dir` in messages; see TempFile::open_at.
void write_file_atomic_at(int dir_fd, const std::string& dir, const std::string& name, std::string_view content);

// The one atomic file writer of inferprof: a file written under a temporary
// name beside its final one, flushed to disk (fsync) and then renamed over
// it, so a reader (or a crash) sees the old file or the whole new one. Write
// errors are remembered rather than thrown, because they happen on the replay
// workers' path; close() and rename_into_place() report the first one.
//
// The temporary name is ".NAME.tmp.PID.RANDOM" (16 hex digits), registered
// with the output owner (output_owner.hpp) until renamed or removed, so that a
// fatal signal removes it; the random part leaves nothing to plant there in
// advance, and the file is created new
// (O_EXCL, O_NOFOLLOW): never a file or symbolic link someone else put there.
class TempFile {
 public:
  TempFile() = default;
  ~TempFile() { remove(); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void open(const std::string& dir, const std::string& name);  // throws Error
  void open(const std::string& path);                          // the folder and name of a path
  // In the folder open as `dir_fd` (named `dir` in messages), which must stay
  // open until the file is renamed or removed: no path is resolved again, so a
  // folder swapped for a symbolic link meanwhile redirects nothing.
  void open_at(int dir_fd, const std::string& dir, const std::string& name);
  bool is_open() const noexcept { return file_ != nullptr; }
  void write(std::string_view data) noexcept;
  void close() noexcept;   // flushes; an error is remembered
  void remove() noexcept;  // closes and unlinks the temporary file
  // Syncs the temporary file to disk and renames it over the final one. Throws Error.
  void rename_into_place();

  int error() const noexcept { return errno_; }
  std::string final_path() const { return join(name_); }
  std::string temp_path() const { return join(temp_name_); }

 private:
  std::string join(const std::string& name) const;
  // `name` as the *at() calls take it: relative to dir_fd_, or with dir_ for AT_FDCWD.
  std::string at(const std::string& name) const;

  std::FILE* file_ = nullptr;
  int dir_fd_ = AT_FDCWD;
  std::string dir_, name_, temp_name_;  // temp_name_ empty: none to remove
  int errno_ = 0;
  std::vector<char> buffer_;  // stdio buffer: large, so workers seldom wait on write(2)
};

}  // namespace report
}  // namespace inferprof
