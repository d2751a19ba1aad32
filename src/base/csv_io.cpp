#include "base/csv_io.hpp"

#include "inferprof/error.hpp"

namespace inferprof::report {

bool CsvReader::next(std::vector<std::string>& fields) {
  fields.clear();
  if (!std::getline(in_, text_)) return false;
  start_ = ++lines_;
  std::string field;
  bool quoted = false;
  for (std::size_t i = 0;; ++i) {
    if (i == text_.size()) {
      if (!quoted) break;
      // A newline inside quotes belongs to the field.
      if (!std::getline(in_, text_)) throw bad_input(at_line(path_, start_, "unterminated quote"));
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

}  // namespace inferprof::report
