#include "base/read_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "inferprof/error.hpp"

namespace inferprof::report {

namespace {

struct Closer {
  int fd;
  ~Closer() { ::close(fd); }
};

}  // namespace

std::optional<std::string> read_regular_file(const std::string& path, std::uint64_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return std::nullopt;  // ENOTDIR: a path through a file
    // A symbolic-link loop, an overlong name: the path is at fault.
    if (err == ELOOP || err == ENAMETOOLONG)
      throw bad_input(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
    throw runtime_failure(fmt::format("{}: cannot open: {}", path, std::strerror(err)));
  }
  const Closer closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw runtime_failure(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
  // A FIFO or a device has no size and would be read without end; a folder reads as nothing.
  if (!S_ISREG(st.st_mode)) throw bad_input(fmt::format("{}: not a regular file", path));
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
