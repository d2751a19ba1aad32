#pragma once
// The one error type of inferprof. Thrown where bad input or a failure is
// found, carrying the user-facing text (file, line, what was expected) and the
// exit code; caught once, in main, which prints "inferprof: error: <what>".
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>

namespace inferprof {

enum class ExitCode : int {
  ok = 0,
  check_failed = 1,  // a regression gate or verification mismatch
  bad_input = 2,     // bad usage, missing file, malformed trace or profile
  runtime = 3,       // model failed to load or run, backend unreachable
};

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const noexcept { return code_; }
  int exit_code() const noexcept { return static_cast<int>(code_); }

 private:
  ExitCode code_;
};

inline Error bad_input(const std::string& message) {
  return Error(ExitCode::bad_input, message);
}
inline Error runtime_failure(const std::string& message) {
  return Error(ExitCode::runtime, message);
}

// "FILE:LINE: what" -- the prefix every trace and profile error carries.
std::string at_line(std::string_view file, std::size_t line, std::string_view what);

}  // namespace inferprof
