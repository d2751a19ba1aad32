#pragma once
// What the reporters of `run --replicas N` (replicas_<format>.cpp) share.
#include <fmt/format.h>

#include <string>

#include "inferprof/replicas_result.hpp"

namespace inferprof::report::replicas_parts {

// Milliseconds with one decimal: "12.3 ms".
inline std::string ms(double v) {
  return fmt::format("{:.1f} ms", v);
}

}  // namespace inferprof::report::replicas_parts
