#pragma once
// The header of a NumPy .npy file (format versions 1 to 3), torch-free so that
// it can be tested and fuzzed on its own bytes; the pipeline reads the data
// that follows it into a tensor.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/trace.hpp"

namespace inferprof {

struct NpyHeader {
  DType dtype = DType::float32;
  std::vector<std::int64_t> shape;  // empty for a 0-d array (one element)
  std::uint64_t data_offset = 0;    // bytes before the data
  std::uint64_t data_bytes = 0;     // elements × element size
};

// Longest header accepted. NumPy writes a few hundred bytes and by default
// refuses to read more than 10,000.
inline constexpr std::uint64_t kNpyMaxHeaderBytes = 65536;
// Bytes of the file parse_npy_header needs at most: magic, version, length, header.
inline constexpr std::uint64_t kNpyMaxPrefixBytes = 12 + kNpyMaxHeaderBytes;

// Parses the header at the start of `head` (the file's first bytes: the whole
// file, or at least its first kNpyMaxPrefixBytes) of a file of `file_size`
// bytes. Checks everything a reader would otherwise allocate on: the magic and
// version, the header's length, a supported little-endian dtype, C order, a
// shape whose element count and size fit in 64 bits, and that the file holds
// that many bytes after the header. Throws Error(bad_input) saying what is
// wrong (without the file's name).
NpyHeader parse_npy_header(std::string_view head, std::uint64_t file_size);

// The header of a version 1.0 .npy file for a C-order little-endian array of
// this dtype and shape (the data follows it), as numpy.save writes it:
// padded with spaces to a multiple of 64 bytes, ending in a newline.
std::string npy_header(DType dtype, const std::vector<std::int64_t>& shape);

// Elements in a tensor of this shape; nullopt when a dimension is negative or
// the count (or any partial product of the non-zero dimensions) exceeds INT64_MAX.
std::optional<std::int64_t> checked_element_count(const std::vector<std::int64_t>& shape);

}  // namespace inferprof
