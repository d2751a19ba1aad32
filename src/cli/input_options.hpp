#pragma once
// --shape and --dtype, as inspect and gen-trace take them.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inferprof/trace.hpp"

namespace inferprof::cli {

// "1,3,224,224" -> {1, 3, 224, 224}. Throws Error(bad_input) naming --shape.
std::vector<std::int64_t> parse_shape_option(const std::string& text);
// "float32" -> DType. Throws Error(bad_input) naming --dtype and the names it takes.
DType parse_dtype_option(const std::string& text);

}  // namespace inferprof::cli
