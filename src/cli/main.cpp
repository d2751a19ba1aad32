// One exit path: every failure is an inferprof::Error carrying its exit code.
#include <cstdio>
#include <exception>

#include "cli/commands.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/printable.hpp"

int main(int argc, char** argv) {
  inferprof::lifecycle::install();  // SIGINT/SIGTERM: see lifecycle.hpp
  try {
    return inferprof::cli::run_cli(argc, argv);
  } catch (const inferprof::Error& e) {
    // One line whatever user text a message quotes (most sites escape it already).
    std::fprintf(stderr, "inferprof: error: %s\n", inferprof::printable(e.what()).c_str());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "inferprof: error: internal: %s\n", inferprof::printable(e.what()).c_str());
    return static_cast<int>(inferprof::ExitCode::runtime);
  }
}
