#include "base/read_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <new>
#include <streambuf>

#include "inferprof/error.hpp"

namespace inferprof::report {

namespace {

struct Closer {
  int fd;
  ~Closer() { ::close(fd); }
};

// Opens `path` without waiting (O_NONBLOCK: a FIFO without a writer would
// block the open) and checks what it is on the descriptor. -1 when it does
// not exist (ENOENT, or ENOTDIR: a path through a file).
int open_regular(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return -1;
    // A symbolic-link loop, an overlong name: the path is at fault.
    if (err == ELOOP || err == ENAMETOOLONG)
      throw bad_input(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
    throw runtime_failure(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw runtime_failure(fmt::format("{}: cannot read: {}", path, std::strerror(err)));
  }
  // A FIFO or a device has no size and would be read without end; a folder reads as nothing.
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw bad_input(fmt::format("{}: not a regular file", path));
  }
  return fd;
}

// A read-only stream buffer over a descriptor it owns.
class FdBuf : public std::streambuf {
 public:
  FdBuf(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FdBuf() override { ::close(fd_); }
  FdBuf(const FdBuf&) = delete;
  FdBuf& operator=(const FdBuf&) = delete;

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    for (;;) {
      const ssize_t got = ::read(fd_, buffer_.data(), buffer_.size());
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw runtime_failure(fmt::format("{}: cannot read: {}", path_, std::strerror(errno)));
      if (got == 0) return traits_type::eof();
      setg(buffer_.data(), buffer_.data(), buffer_.data() + got);
      return traits_type::to_int_type(*gptr());
    }
  }

 private:
  int fd_;
  std::string path_;
  std::array<char, 1 << 16> buffer_{};
};

class FdStream : public std::istream {
 public:
  FdStream(int fd, const std::string& path) : std::istream(nullptr), buf_(fd, path) { rdbuf(&buf_); }

 private:
  FdBuf buf_;
};

}  // namespace

std::unique_ptr<std::istream> open_regular_file(const std::string& path) {
  const int fd = open_regular(path);
  if (fd < 0) throw bad_input(fmt::format("{}: cannot open: {}", path, std::strerror(ENOENT)));
  return std::make_unique<FdStream>(fd, path);
}

std::optional<std::string> read_regular_file(const std::string& path, std::uint64_t max_bytes) {
  const int fd = open_regular(path);
  if (fd < 0) return std::nullopt;
  const Closer closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw runtime_failure(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  const auto size = static_cast<std::uint64_t>(st.st_size);
  if (size > max_bytes) throw bad_input(fmt::format("{}: {} bytes, more than the {} expected", path, size, max_bytes));
  std::string out;
  try {
    out.resize(static_cast<std::size_t>(size));
  } catch (const std::bad_alloc&) {
    throw runtime_failure(fmt::format("{}: {} bytes: not enough memory to read it (see ulimit -v)", path, size));
  }
  std::size_t done = 0;
  while (done < out.size()) {
    const ssize_t got = ::read(fd, out.data() + done, out.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw runtime_failure(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    if (got == 0) throw runtime_failure(fmt::format("{}: the file shrank while it was read", path));
    done += static_cast<std::size_t>(got);
  }
  return out;
}

std::filesystem::file_status path_status(const std::string& path, const std::string& named) {
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && ec != std::errc::not_a_directory)
    throw bad_input(fmt::format("{}: {}", named, ec.message()));
  return st;
}

}  // namespace inferprof::report
