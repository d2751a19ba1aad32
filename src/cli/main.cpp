// One exit path: every failure is an inferprof::Error carrying its exit code.
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"

int main(int argc, char** argv) {
  inferprof::lifecycle::install();  // SIGINT/SIGTERM: see lifecycle.hpp
  try {
    return inferprof::cli::run_cli(argc, argv);
  } catch (const inferprof::Error& e) {
    std::fprintf(stderr, "inferprof: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inferprof: error: internal: %s\n", e.what());
    return static_cast<int>(inferprof::ExitCode::runtime);
  }
}
