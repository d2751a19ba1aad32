#pragma once
// --shape and --dtype, as inspect and gen-trace take them, and the token inputs they synthesise.
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
// Synthesised token inputs for people: "ids [1, 128] int64 in [0, 32000), mask [1, 128] int64 = 1".
std::string token_inputs_text(const std::vector<InputSpec>& inputs);

}  // namespace inferprof::cli
