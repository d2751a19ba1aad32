#pragma once
// Reading a whole file that a user or a store names, bounded: the one reader
// of files whose size decides an allocation (models, store metadata, a
// tokenizer's model).
#include <cstdint>
#include <filesystem>
#include <istream>
#include <memory>
#include <optional>
#include <string>

namespace inferprof::report {

// The bytes of the regular file at `path`, read through one descriptor that
// was opened without waiting (O_NONBLOCK: a FIFO is refused, not waited on),
// so that what is checked is what is read. nullopt when `path` does not
// exist (ENOENT, or ENOTDIR: a path through a file). Throws Error "PATH: ...": bad_input for what is not a regular file
// (a folder, a device, a FIFO, a symbolic-link loop) or is over `max_bytes`;
// runtime when it cannot be read, or when its size cannot be allocated (a
// 6 GB model under `ulimit -v`), naming the size.
std::optional<std::string> read_regular_file(const std::string& path, std::uint64_t max_bytes);

// The regular file at `path` as a stream, for a reader that goes through it a
// line at a time (requests.csv): opened as read_regular_file opens one
// (without waiting, so a FIFO is refused at once, not waited on), then read
// through that same descriptor. Throws Error(bad_input) "PATH: ..." when it
// does not exist or is not a regular file, runtime when it cannot be opened.
std::unique_ptr<std::istream> open_regular_file(const std::string& path);

// What `path` is (links followed; file_type::not_found when it does not
// exist). A path that cannot be looked at (a symbolic-link loop, an overlong
// name) throws Error(bad_input) "NAMED: why", `named` saying what it is
// ("model 'PATH'"), where std::filesystem would throw an internal error.
std::filesystem::file_status path_status(const std::string& path, const std::string& named);

}  // namespace inferprof::report
