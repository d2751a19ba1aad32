#pragma once
// The one CSV reader of inferprof (RFC 4180: quoted fields may hold commas,
// doubled quotes and newlines; a CR before a line end is dropped). Its writer
// half is append_csv_field (base/text.hpp), which quotes what needs it.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace inferprof::report {

class CsvReader {
 public:
  // `path` names the file in errors.
  CsvReader(std::istream& in, std::string path) : in_(in), path_(std::move(path)) {}
  // The next record into `fields`; false at the end of the input. Throws
  // Error(bad_input) "PATH:LINE: unterminated quote" for a quote left open.
  bool next(std::vector<std::string>& fields);
  // The line the last record started on (1-based).
  std::uint64_t line() const noexcept { return start_; }
  // An empty line, or one of only spaces and tabs.
  static bool blank(const std::vector<std::string>& fields);
  // The index of column `name` in a header record, or -1.
  static int column(const std::vector<std::string>& header, const std::string& name);

 private:
  std::istream& in_;
  std::string path_;
  std::string text_;
  std::uint64_t lines_ = 0, start_ = 0;
};

}  // namespace inferprof::report
