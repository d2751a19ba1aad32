#include "base/csv_io.hpp"

#include <fmt/format.h>

#include <streambuf>

#include "base/text.hpp"
#include "inferprof/error.hpp"

namespace inferprof::report {

void CsvReader::too_long() const {
  throw bad_input(at_line(path_, start_,
                          fmt::format("a record longer than {} bytes (expected a CSV of rows under that)",
                                      group_thousands(max_record_bytes_))));
}

bool CsvReader::read_line(std::size_t room) {
  // The stream's own scan for the newline (no byte-at-a-time loop), into a buffer of the cap's size: at most
  // `room` bytes are stored, and a longer line stops the read there.
  if (line_.size() < max_record_bytes_ + 1) line_.resize(max_record_bytes_ + 1);
  in_.getline(line_.data(), static_cast<std::streamsize>(room + 1));
  const auto got = static_cast<std::size_t>(in_.gcount());
  if (in_.bad()) throw runtime_failure(fmt::format("{}: cannot read", path_));
  if (in_.fail()) {
    if (got == 0 && in_.eof()) return false;  // the end, nothing read
    if (!in_.eof()) too_long();               // `room` bytes stored, the line goes on
  }
  // With the newline counted in gcount() unless the file ended first.
  const std::size_t length = in_.eof() ? got : got - 1;
  text_.assign(line_.data(), length);
  return true;
}

bool CsvReader::next(std::vector<std::string>& fields) {
  fields.clear();
  start_ = lines_ + 1;
  if (!read_line(max_record_bytes_)) return false;
  start_ = ++lines_;
  std::size_t used = text_.size();  // bytes of the record so far, toward the cap
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0;; ++i) {
    if (i == text_.size()) {
      if (!quoted) break;
      // A newline inside quotes belongs to the field.
      if (used >= max_record_bytes_) too_long();  // the newline would be one byte more
      if (!read_line(max_record_bytes_ - used - 1)) throw bad_input(at_line(path_, start_, "unterminated quote"));
      used += 1 + text_.size();
      ++lines_;
      field += '\n';
      i = static_cast<std::size_t>(-1);
      continue;
    }
    const char c = text_[i];
    if (quoted) {
      if (c == '"' && i + 1 < text_.size() && text_[i + 1] == '"') {
        field += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else if (c != '\r' || i + 1 != text_.size()) {
        field += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
    } else if (c != '\r' || i + 1 != text_.size()) {
      field += c;
    }
  }
  fields.push_back(std::move(field));
  return true;
}

bool CsvReader::blank(const std::vector<std::string>& fields) {
  return fields.size() == 1 && fields[0].find_first_not_of(" \t") == std::string::npos;
}

int CsvReader::column(const std::vector<std::string>& header, const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

std::string csv_text(std::string_view cell) {
  const std::size_t after = cell.find_first_not_of('\'');
  if (after == 0 || after == std::string_view::npos || !csv_formula_start(cell[after])) return std::string(cell);
  return std::string(cell.substr(1));
}

}  // namespace inferprof::report
