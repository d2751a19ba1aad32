// The .npy header (trace inputs with "file"): parse_npy_header, torch-free.
// Called as the pipeline calls it (the file's first bytes and its size), once
// with the whole input and once with the input taken as the prefix of a file
// 4 GiB longer, and checked against what it promises the reader.
#include <stdexcept>

#include "fuzz_support.hpp"
#include "inferprof/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto check = [&](std::uint64_t file_size) {
    return fuzz::expect_error_or_success([&] {
      const NpyHeader h = parse_npy_header(bytes.substr(0, kNpyMaxPrefixBytes), file_size);
      if (h.data_offset > file_size || h.data_bytes > file_size - h.data_offset)
        throw std::logic_error("parse_npy_header accepted a header whose data runs past the end of the file");
      const std::optional<std::int64_t> n = checked_element_count(h.shape);
      if (!n || static_cast<std::uint64_t>(*n) * dtype_size(h.dtype) != h.data_bytes)
        throw std::logic_error("parse_npy_header: data_bytes is not the shape's element count times the dtype's size");
    });
  };
  bool ok = check(size);
  ok |= check(std::uint64_t{size} + (std::uint64_t{1} << 32));
  return fuzz::verdict(ok);
}
