#pragma once
// Writing files atomically: under a temporary name, fsync, rename.
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/error.hpp"

namespace inferprof::report {

// "dir/.name.tmp.<pid>", or with unique = true "dir/.name.tmp.<pid>.<n>" so two
// collectors alive in one process never share a temporary file.
std::string temp_path_for(const std::string& dir, const std::string& name, bool unique);
// "cannot write 'PATH': strerror(err)", exit code runtime.
Error write_error(const std::string& path, int err);

// The one atomic file writer of inferprof: a file written under a temporary
// name beside its final one, flushed to disk (fsync) and then renamed over
// it, so a reader (or a crash) sees the old file or the whole new one. Write
// errors are remembered rather than thrown, because they happen on the replay
// workers' path; close() and rename_into_place() report the first one.
class TempFile {
 public:
  TempFile() = default;
  ~TempFile() { remove(); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void open(const std::string& dir, const std::string& name);  // throws Error
  void open(const std::string& path);                          // the folder and name of a path
  bool is_open() const noexcept { return file_ != nullptr; }
  void write(std::string_view data) noexcept;
  void close() noexcept;   // flushes; an error is remembered
  void remove() noexcept;  // closes and unlinks the temporary file
  // Syncs the temporary file to disk and renames it over the final one. Throws Error.
  void rename_into_place();

  int error() const noexcept { return errno_; }
  const std::string& final_path() const noexcept { return final_; }
  const std::string& temp_path() const noexcept { return temp_; }

 private:
  std::FILE* file_ = nullptr;
  std::string temp_;
  std::string final_;
  int errno_ = 0;
  std::vector<char> buffer_;  // stdio buffer: large, so workers seldom wait on write(2)
};

}  // namespace inferprof::report
