#pragma once
// A CSV trace's rows with its columns resolved from the header once: the one
// reading of CSV traces, shared by TraceReader (run, compare) and simulate.
#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/csv_io.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {

class CsvRows {
 public:
  struct Row {
    std::string_view key;
    std::optional<double> ts_ms;
    std::uint64_t size = 0;  // 0 without a size column
    std::string_view image;  // empty without an image column
    std::optional<std::uint64_t> seed;
    std::uint64_t line = 0;  // where the row starts (1-based)
  };
  // Reads the header. Throws Error(bad_input) "PATH:1: ..." when it lacks a
  // column that is required or that `cols` names.
  CsvRows(const std::string& path, const CsvColumns& cols);
  // The next non-blank row (views valid until the next call); false at the
  // end. Throws Error(bad_input) "PATH:LINE: ..." for a bad row, which is
  // consumed: the next call reads on.
  bool next(Row& out);
  std::uint64_t bytes() const noexcept { return bytes_; }  // consumed so far

 private:
  std::string path_;
  std::ifstream in_;
  report::CsvReader csv_;
  std::vector<std::string> fields_;
  std::uint64_t bytes_ = 0;
  int key_ = -1, ts_ = -1, size_ = -1, image_ = -1, seed_ = -1;
};

}  // namespace inferprof
