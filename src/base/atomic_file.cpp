// Every file inferprof writes is complete or absent: written under a temporary
// name in the same folder (so the rename cannot cross file systems), synced
// to disk, then renamed.
#include "base/atomic_file.hpp"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "base/output_owner.hpp"
#include "base/text.hpp"

namespace inferprof {
namespace report {

namespace {

// 64 bits from the kernel's generator. Before it is seeded (early boot) the
// clock and a counter still differ per call; O_EXCL keeps that safe.
std::uint64_t random_suffix() {
  std::uint64_t v = 0;
  if (::getrandom(&v, sizeof v, GRND_NONBLOCK) == static_cast<ssize_t>(sizeof v)) return v;
  static std::atomic<std::uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return static_cast<std::uint64_t>(now) * 0x9E3779B97F4A7C15ull + counter.fetch_add(1);
}

}  // namespace

Error write_error(const std::string& path, int err) {
  return Error(ExitCode::runtime, fmt::format("cannot write '{}': {}", path, std::strerror(err)));
}

std::string TempFile::join(const std::string& name) const {
  return join_path(dir_, name);
}
std::string TempFile::at(const std::string& name) const {
  return dir_fd_ == AT_FDCWD ? join(name) : name;
}

void TempFile::open(const std::string& dir, const std::string& name) {
  open_at(AT_FDCWD, dir, name);
}

void TempFile::open_at(int dir_fd, const std::string& dir, const std::string& name) {
  remove();
  dir_fd_ = dir_fd;
  dir_ = dir;
  name_ = name;
  errno_ = 0;
  int fd = -1;
  // A name taken already (EEXIST) is someone else's: another random one.
  for (int attempt = 0; fd < 0 && attempt < 8; ++attempt) {
    temp_name_ = fmt::format(".{}.tmp.{}.{:016x}", name, ::getpid(), random_suffix());
    fd = ::openat(dir_fd_, at(temp_name_).c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd >= 0) output::track_temp(join(temp_name_));
  if (fd >= 0) file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    const int err = errno;
    if (fd >= 0) {
      ::close(fd);
      output::discard_temp(dir_fd_, at(temp_name_), join(temp_name_));
    }
    temp_name_.clear();
    throw write_error(final_path(), err);
  }
  buffer_.resize(1 << 20);
  std::setvbuf(file_, buffer_.data(), _IOFBF, buffer_.size());
}

void TempFile::open(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return open(".", path);
  open(slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1));
}

void TempFile::write(std::string_view data) noexcept {
  if (file_ == nullptr || errno_ != 0 || data.empty()) return;
  if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) errno_ = errno ? errno : EIO;
}

void TempFile::close() noexcept {
  if (file_ == nullptr) return;
  if (std::fflush(file_) != 0 && errno_ == 0) errno_ = errno ? errno : EIO;
  if (std::fclose(file_) != 0 && errno_ == 0) errno_ = errno ? errno : EIO;
  file_ = nullptr;
}

void TempFile::remove() noexcept {
  close();
  if (!temp_name_.empty()) {
    output::discard_temp(dir_fd_, at(temp_name_), join(temp_name_));
  }
  temp_name_.clear();
}

void TempFile::rename_into_place() {
  close();
  if (errno_ != 0) throw write_error(final_path(), errno_);
  // fsync before the rename: after a crash the final name holds the old file
  // or the whole new one, never a renamed file whose data never reached disk.
  // Through a new descriptor, as the file may have been reopened since close().
  const int fd = ::openat(dir_fd_, at(temp_name_).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw write_error(final_path(), errno);
  const int synced = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (synced != 0) throw write_error(final_path(), err);
  // A file renamed over one that was there (a report of an earlier run, a store's index.json) replaced it: it
  // is not recorded as created, so a failure later in this process never removes it (the old one is gone).
  struct stat before {};
  const bool replaces = ::fstatat(dir_fd_, at(name_).c_str(), &before, AT_SYMLINK_NOFOLLOW) == 0;
  if (::renameat(dir_fd_, at(temp_name_).c_str(), dir_fd_, at(name_).c_str()) != 0)
    throw write_error(final_path(), errno);
  output::forget_temp(join(temp_name_));
  if (!replaces) output::created(final_path());
  temp_name_.clear();
}

}  // namespace report

void report::write_file_atomic_at(int dir_fd, const std::string& dir, const std::string& name,
                                  std::string_view content) {
  TempFile file;
  file.open_at(dir_fd, dir, name);
  file.write(content);
  file.rename_into_place();  // removes the temporary file (destructor) if it throws
}

void write_file_atomic(const std::string& dir, const std::string& name, const std::string& content) {
  report::write_file_atomic_at(AT_FDCWD, dir, name, content);
}

}  // namespace inferprof
