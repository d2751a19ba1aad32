#include <fmt/format.h>

#include <array>

#include "inferprof/trace.hpp"

namespace inferprof {

namespace {

struct DTypeInfo {
  DType dtype;
  std::string_view name;
  std::size_t size;
};

// Indexed by the enum's value, so dtype_name/dtype_size are a table lookup.
constexpr std::array<DTypeInfo, 9> kDTypes = {{
    {DType::uint8, "uint8", 1},
    {DType::int8, "int8", 1},
    {DType::int16, "int16", 2},
    {DType::int32, "int32", 4},
    {DType::int64, "int64", 8},
    {DType::float16, "float16", 2},
    {DType::float32, "float32", 4},
    {DType::float64, "float64", 8},
    {DType::boolean, "bool", 1},
}};

const DTypeInfo& info(DType d) {
  return kDTypes.at(static_cast<std::size_t>(d));
}

}  // namespace

std::string_view dtype_name(DType d) {
  return info(d).name;
}

std::size_t dtype_size(DType d) {
  return info(d).size;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& entry : kDTypes) {
    if (entry.name == name) return entry.dtype;
  }
  return std::nullopt;
}

std::string format_shape(const std::vector<std::int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

}  // namespace inferprof
