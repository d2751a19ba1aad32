#pragma once
// Shared by the fuzz targets: the readers under test take file paths, so each
// input is written to a file in a private temporary folder (one per process,
// removed at exit). inferprof::Error is a reader's expected answer to bad
// input; anything else escaping a target is a finding.
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

#include "inferprof/error.hpp"

namespace inferprof::fuzz {

// Never destroyed: the atexit handler that removes the folder runs after the
// destructors of statics constructed later, and a static path would be one
// of them (it was: the handler read a destroyed path and removed nothing).
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path* const dir = [] {
    std::string tmpl = (std::filesystem::temp_directory_path() / "inferprof-fuzz-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("fuzz: cannot create a temporary folder");
    auto* path = new std::filesystem::path(tmpl);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return path;
  }();
  return *dir;
}

// Writes the bytes to scratch_dir()/name, replacing what was there.
inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path p = scratch_dir() / name;
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) throw std::runtime_error("fuzz: cannot write " + p.string());
  return p.string();
}

inline void remove_input(const std::string& name) {
  std::error_code ec;
  std::filesystem::remove(scratch_dir() / name, ec);
}

// Runs one reader call; an Error is the expected outcome for bad input, and
// its message must be one line (the house rule for every error). Returns
// whether the reader accepted the input.
template <class F>
bool expect_error_or_success(F&& f) {
  try {
    f();
    return true;
  } catch (const Error& e) {
    const std::string_view what = e.what();
    if (what.empty()) throw std::logic_error("fuzz: an inferprof::Error with an empty message");
    // One line, no terminal control characters: input echoed raw is a finding.
    for (char c : what)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw std::logic_error("fuzz: error message not one printable line: " + std::string(what));
    return false;
  }
}

// The target's return value: 0 when some reader accepted the input, -1 when
// all answered with an Error (libFuzzer then keeps it out of the corpus).
inline int verdict(bool accepted) {
  return accepted ? 0 : -1;
}

}  // namespace inferprof::fuzz
