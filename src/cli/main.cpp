// One exit path: every failure is an inferprof::Error carrying its exit code.
#include <cerrno>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>

#include "base/output_owner.hpp"
#include "cli/commands.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/printable.hpp"

int main(int argc, char** argv) {
  inferprof::lifecycle::install();  // SIGINT/SIGTERM: see lifecycle.hpp
  try {
    return inferprof::cli::run_cli(argc, argv);
  } catch (const inferprof::Error& e) {
    // A command that failed leaves nothing it wrote (a gate's failure, exit 1, is a result: its reports stay).
    if (e.code() != inferprof::ExitCode::check_failed) inferprof::output::abandon_all();
    // One line whatever user text a message quotes (most sites escape it already).
    std::fprintf(stderr, "inferprof: error: %s\n", inferprof::printable(e.what()).c_str());
    return e.exit_code();
  } catch (const std::filesystem::filesystem_error& e) {
    inferprof::output::abandon_all();
    // A path the library could not look at (a symbolic-link loop, say) where no caller named it: the path, not
    // "internal".
    const int err = e.code().value();
    const bool input = err == ELOOP || err == ENOENT || err == ENOTDIR || err == EISDIR || err == ENAMETOOLONG;
    std::fprintf(stderr, "inferprof: error: %s: %s\n", inferprof::printable(e.path1().string()).c_str(),
                 inferprof::printable(e.code().message()).c_str());
    return static_cast<int>(input ? inferprof::ExitCode::bad_input : inferprof::ExitCode::runtime);
  } catch (const std::bad_alloc&) {
    inferprof::output::abandon_all();
    std::fprintf(stderr, "inferprof: error: out of memory (more than this process may allocate: see ulimit -v)\n");
    return static_cast<int>(inferprof::ExitCode::runtime);
  } catch (const std::exception& e) {
    inferprof::output::abandon_all();
    std::fprintf(stderr, "inferprof: error: internal: %s\n", inferprof::printable(e.what()).c_str());
    return static_cast<int>(inferprof::ExitCode::runtime);
  }
}
