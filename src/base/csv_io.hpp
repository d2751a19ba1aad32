#pragma once
// The one CSV reader of inferprof (RFC 4180: quoted fields may hold commas,
// doubled quotes and newlines; a CR before a line end is dropped). Its writer
// half is append_csv_field (base/text.hpp), which quotes what needs it.
#include <cstddef>
#include <cstdint>
#include <istream>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof::report {

// The longest record (a line, or the lines a quoted field spans) a CSV may
// hold: a longer one is refused when the cap is reached, not buffered whole.
inline constexpr std::size_t kMaxCsvRecordBytes = std::size_t{1} << 20;  // 1 MiB

class CsvReader {
 public:
  // `path` names the file in errors.
  CsvReader(std::istream& in, std::string path, std::size_t max_record_bytes = kMaxCsvRecordBytes)
      : in_(in), path_(std::move(path)), max_record_bytes_(max_record_bytes) {}
  // The next record into `fields`; false at the end of the input. Throws
  // Error(bad_input) "PATH:LINE: unterminated quote" for a quote left open,
  // and "PATH:LINE: a record longer than ..." for one over the cap.
  bool next(std::vector<std::string>& fields);
  // The line the last record started on (1-based).
  std::uint64_t line() const noexcept { return start_; }
  // An empty line, or one of only spaces and tabs.
  static bool blank(const std::vector<std::string>& fields);
  // The index of column `name` in a header record, or -1.
  static int column(const std::vector<std::string>& header, const std::string& name);

 private:
  // The next physical line into text_, without its '\n', at most `room` bytes; false at the end.
  bool read_line(std::size_t room);
  [[noreturn]] void too_long() const;

  std::istream& in_;
  std::string path_;
  std::size_t max_record_bytes_;
  std::string text_;
  std::vector<char> line_;  // read_line's buffer: the cap and one byte, allocated at the first read
  std::uint64_t lines_ = 0, start_ = 0;
};

// A text cell of a CSV inferprof wrote, as it was before append_csv_field
// guarded it against spreadsheet formulas: one leading "'" dropped from a cell
// that starts with quotes and then '=', '+', '-', '@', a tab or a CR. For the
// files inferprof reads back (requests.csv); other CSVs (traces) are read as
// they are.
std::string csv_text(std::string_view cell);

}  // namespace inferprof::report
