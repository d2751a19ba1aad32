#include "inferprof/error.hpp"

#include <fmt/format.h>

namespace inferprof {

std::string at_line(std::string_view file, std::size_t line, std::string_view what) {
  return fmt::format("{}:{}: {}", file, line, what);
}

}  // namespace inferprof
