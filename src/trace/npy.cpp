// .npy headers: "\x93NUMPY", version, header length, then a Python dict
// literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }
// padded with spaces to a multiple of 64 bytes.
#include "inferprof/npy.hpp"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cstring>
#include <limits>
#include <utility>

#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

namespace inferprof {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw bad_input(what);
}

// The value after 'key': in the dict: a quoted string, a parenthesised tuple,
// or a bare word up to the next ',' or '}'. Empty when the key is absent.
std::string_view dict_value(std::string_view dict, std::string_view key) {
  const std::string quoted = fmt::format("'{}'", key);
  std::size_t pos = dict.find(quoted);
  if (pos == std::string_view::npos) return {};
  pos = dict.find_first_not_of(' ', pos + quoted.size());
  if (pos == std::string_view::npos || dict[pos] != ':') return {};
  pos = dict.find_first_not_of(' ', pos + 1);
  if (pos == std::string_view::npos) return {};
  const char open = dict[pos];
  if (open == '\'' || open == '(') {
    const std::size_t end = dict.find(open == '(' ? ')' : '\'', pos + 1);
    return end == std::string_view::npos ? std::string_view{} : dict.substr(pos, end - pos + 1);
  }
  const std::size_t end = dict.find_first_of(",}", pos);
  return dict.substr(pos, (end == std::string_view::npos ? dict.size() : end) - pos);
}

std::string_view trim(std::string_view s) {
  const std::size_t first = s.find_first_not_of(' ');
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(' ') - first + 1);
}

// numpy's spelling of each dtype, the first of each being what numpy.save writes.
constexpr std::array<std::pair<std::string_view, DType>, 11> kTypes = {{
    {"'|u1'", DType::uint8},
    {"'<u1'", DType::uint8},
    {"'|i1'", DType::int8},
    {"'<i1'", DType::int8},
    {"'<i2'", DType::int16},
    {"'<i4'", DType::int32},
    {"'<i8'", DType::int64},
    {"'<f2'", DType::float16},
    {"'<f4'", DType::float32},
    {"'<f8'", DType::float64},
    {"'|b1'", DType::boolean},
}};

DType parse_descr(std::string_view descr) {
  for (const auto& [name, dtype] : kTypes)
    if (name == descr) return dtype;
  fail(fmt::format("unsupported dtype {} (expected little-endian u1, i1, i2, i4, i8, f2, f4, f8 or b1)",
                   descr.empty() ? "(none)" : printable(descr)));
}

// "(1, 3, 224, 224)", "(5,)" or "()".
std::vector<std::int64_t> parse_shape(std::string_view tuple) {
  if (tuple.size() < 2 || tuple.front() != '(' || tuple.back() != ')') fail("header has no shape");
  std::string_view rest = tuple.substr(1, tuple.size() - 2);
  std::vector<std::int64_t> shape;
  while (!trim(rest).empty()) {
    const std::size_t comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    std::uint64_t extent = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), extent);
    if (item.empty() || ec == std::errc::invalid_argument || end != item.data() + item.size())
      fail(fmt::format("shape {}: expected non-negative integers", printable(tuple)));
    if (ec == std::errc::result_out_of_range ||
        extent > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      fail(fmt::format("shape {}: a dimension exceeds {}", printable(tuple), std::numeric_limits<std::int64_t>::max()));
    shape.push_back(static_cast<std::int64_t>(extent));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return shape;
}

}  // namespace

std::optional<std::int64_t> checked_element_count(const std::vector<std::int64_t>& shape) {
  std::int64_t count = 1;
  bool zero = false;
  for (std::int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (d == 0) {
      zero = true;  // still check the others: libtorch multiplies them for the strides
      continue;
    }
    if (count > std::numeric_limits<std::int64_t>::max() / d) return std::nullopt;
    count *= d;
  }
  return zero ? 0 : count;
}

NpyHeader parse_npy_header(std::string_view head, std::uint64_t file_size) {
  constexpr std::string_view kMagic = "\x93NUMPY";
  if (head.size() < 8 || head.substr(0, kMagic.size()) != kMagic) fail("not a .npy file (bad magic)");
  const auto major = static_cast<unsigned char>(head[6]);
  if (major < 1 || major > 3)
    fail(fmt::format("unsupported .npy format version {}.{} (expected 1.0, 2.0 or 3.0)", major,
                     static_cast<unsigned char>(head[7])));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  if (head.size() < 8 + length_bytes) fail("truncated header");
  std::uint64_t header_len = 0;
  for (std::size_t i = 0; i < length_bytes; ++i)
    header_len |= std::uint64_t{static_cast<unsigned char>(head[8 + i])} << (8 * i);
  if (header_len > kNpyMaxHeaderBytes)
    fail(fmt::format("header of {} bytes (at most {} supported)", header_len, kNpyMaxHeaderBytes));
  NpyHeader out;
  out.data_offset = 8 + length_bytes + header_len;
  if (head.size() < out.data_offset || file_size < out.data_offset) fail("truncated header");
  const std::string_view dict = head.substr(8 + length_bytes, header_len);

  // numpy reads the dict with literal_eval: a repeated key would mean its last
  // value, which this reader does not look for; fortran_order must be a bool.
  for (std::string_view key : {"'descr'", "'fortran_order'", "'shape'"})
    if (const std::size_t first = dict.find(key);
        first != std::string_view::npos && dict.find(key, first + key.size()) != std::string_view::npos)
      fail(fmt::format("header has the key {} twice (expected one of each: descr, fortran_order, shape)", key));
  out.dtype = parse_descr(dict_value(dict, "descr"));
  const std::string_view order = trim(dict_value(dict, "fortran_order"));
  if (order == "True") fail("Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  if (order != "False")
    fail(fmt::format("fortran_order is {} (expected True or False, as numpy writes)",
                     order.empty() ? "missing" : printable(order)));
  out.shape = parse_shape(dict_value(dict, "shape"));
  const std::optional<std::int64_t> count = checked_element_count(out.shape);
  const auto size = static_cast<std::int64_t>(dtype_size(out.dtype));
  if (!count || *count > std::numeric_limits<std::int64_t>::max() / size)
    fail(fmt::format("shape {}: more bytes than fit in 64 bits", format_shape(out.shape)));
  out.data_bytes = static_cast<std::uint64_t>(*count * size);
  if (file_size - out.data_offset < out.data_bytes)
    fail(fmt::format("truncated data (expected {} bytes for shape {}, the file has {})", out.data_bytes,
                     format_shape(out.shape), file_size - out.data_offset));
  return out;
}

std::string npy_header(DType dtype, const std::vector<std::int64_t>& shape) {
  std::string_view descr;
  for (const auto& [name, d] : kTypes)
    if (d == dtype && descr.empty()) descr = name;
  // A 1-tuple keeps its comma, as Python spells it: (5,).
  const std::string dims = shape.size() == 1 ? fmt::format("{},", shape[0]) : fmt::format("{}", fmt::join(shape, ", "));
  std::string dict = fmt::format("{{'descr': {}, 'fortran_order': False, 'shape': ({}), }}", descr, dims);
  const std::size_t unpadded = 10 + dict.size() + 1;  // magic, version, length, dict, newline
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(dict.size() & 0xFF);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict;
}

}  // namespace inferprof
