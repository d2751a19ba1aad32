// Every file inferprof writes is complete or absent: written under a temporary
// name in the same folder (so the rename cannot cross file systems), synced
// to disk, then renamed.
#include "report/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "report/text.hpp"

namespace inferprof {
namespace report {

std::string temp_path_for(const std::string& dir, const std::string& name, bool unique) {
  static std::atomic<unsigned> counter{0};
  if (!unique) return join_path(dir, fmt::format(".{}.tmp.{}", name, ::getpid()));
  return join_path(dir, fmt::format(".{}.tmp.{}.{}", name, ::getpid(), counter.fetch_add(1)));
}

Error write_error(const std::string& path, int err) {
  return Error(ExitCode::runtime, fmt::format("cannot write '{}': {}", path, std::strerror(err)));
}

void TempFile::open(const std::string& dir, const std::string& name) {
  remove();
  final_ = join_path(dir, name);
  temp_ = temp_path_for(dir, name, true);
  errno_ = 0;
  file_ = std::fopen(temp_.c_str(), "wb");
  if (file_ == nullptr) {
    const int err = errno;
    temp_.clear();
    throw write_error(final_, err);
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
  if (!temp_.empty()) std::remove(temp_.c_str());
  temp_.clear();
}

void TempFile::rename_into_place() {
  close();
  if (errno_ != 0) throw write_error(final_, errno_);
  // fsync before the rename: after a crash the final name holds the old file
  // or the whole new one, never a renamed file whose data never reached disk.
  // Through a new descriptor, as the file may have been reopened since close().
  const int fd = ::open(temp_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw write_error(final_, errno);
  const int synced = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (synced != 0) throw write_error(final_, err);
  if (std::rename(temp_.c_str(), final_.c_str()) != 0) throw write_error(final_, errno);
  temp_.clear();
}

namespace {

Error cannot_use_dir(const std::string& dir, const std::string& why) {
  return bad_input(fmt::format("cannot write reports to '{}': {}", dir, why));
}

// mkdir -p, with errno kept so that a path under a regular file reads
// "Not a directory" rather than std::filesystem's varying wording.
int make_directories(const std::string& dir) {
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    const std::string prefix = dir.substr(0, pos);
    if (prefix.empty() || prefix == "/") continue;
    if (::mkdir(prefix.c_str(), 0777) == 0) continue;
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

}  // namespace
}  // namespace report

void write_file_atomic(const std::string& dir, const std::string& name, const std::string& content) {
  report::TempFile file;
  file.open(dir, name);
  file.write(content);
  file.rename_into_place();  // removes the temporary file (destructor) if it throws
}

void ensure_output_dir(const std::string& dir) {
  if (dir.empty()) throw report::cannot_use_dir(dir, "no folder given");
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw report::cannot_use_dir(dir, std::strerror(ENOTDIR));
  } else if (const int err = report::make_directories(dir); err != 0) {
    throw report::cannot_use_dir(dir, std::strerror(err));
  }
  // Creating the folder proves little (it may exist read-only); a probe file
  // shows that the reports can be written before any work is done.
  const std::string probe = report::join_path(dir, fmt::format(".inferprof-probe.{}", ::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw report::cannot_use_dir(dir, std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace inferprof
