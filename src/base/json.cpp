#include "base/json.hpp"

#include <cmath>
#include <iterator>

#include "base/text.hpp"

namespace inferprof::report {
void append_json_string(fmt::memory_buffer& out, std::string_view s) {
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"':
        out.append(std::string_view("\\\""));
        ++i;
        continue;
      case '\\':
        out.append(std::string_view("\\\\"));
        ++i;
        continue;
      case '\n':
        out.append(std::string_view("\\n"));
        ++i;
        continue;
      case '\r':
        out.append(std::string_view("\\r"));
        ++i;
        continue;
      case '\t':
        out.append(std::string_view("\\t"));
        ++i;
        continue;
      default:
        break;
    }
    if (c < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", static_cast<unsigned>(c));
      ++i;
      continue;
    }
    const std::size_t len = utf8_sequence_length(s, i);
    if (len == 0) {
      out.append(std::string_view("\xEF\xBF\xBD"));
      ++i;
      continue;
    }
    out.append(s.substr(i, len));
    i += len;
  }
  out.push_back('"');
}

std::string json_string(std::string_view s) {
  fmt::memory_buffer out;
  append_json_string(out, s);
  return fmt::to_string(out);
}

void append_json_number(fmt::memory_buffer& out, double v, int decimals) {
  if (!std::isfinite(v)) {
    out.append(std::string_view("null"));
    return;
  }
  if (decimals >= 0) {
    const double scale = std::pow(10.0, decimals);
    const double rounded = std::round(v * scale) / scale;
    if (std::isfinite(rounded)) v = rounded;
  }
  if (v == 0) v = 0;  // no "-0"
  // fmt's shortest round-trip form; exponents ("1e+21") are valid JSON.
  fmt::format_to(std::back_inserter(out), "{}", v);
}

void JsonWriter::newline_indent() {
  out_.push_back('\n');
  for (std::size_t i = 0; i < levels_.size(); ++i)
    out_.append(std::string_view("  "));
}

void JsonWriter::before_value() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (levels_.empty()) return;
  Level& level = levels_.back();
  if (!level.first) out_.push_back(',');
  if (level.compact) {
    if (!level.first) out_.push_back(' ');
  } else {
    newline_indent();
  }
  level.first = false;
}

JsonWriter& JsonWriter::begin_object() {
  before_value();
  out_.push_back('{');
  levels_.push_back(Level{});
  return *this;
}

JsonWriter& JsonWriter::begin_array(bool compact) {
  before_value();
  out_.push_back('[');
  levels_.push_back(Level{true, compact});
  return *this;
}

void JsonWriter::close(char c) {
  const Level level = levels_.back();
  levels_.pop_back();
  if (!level.first && !level.compact) newline_indent();
  out_.push_back(c);
  if (levels_.empty()) out_.push_back('\n');
}

JsonWriter& JsonWriter::end_object() {
  close('}');
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  close(']');
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view k) {
  before_value();
  append_json_string(out_, k);
  out_.append(std::string_view(": "));
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view s) {
  before_value();
  append_json_string(out_, s);
  return *this;
}

JsonWriter& JsonWriter::value(bool b) {
  before_value();
  out_.append(std::string_view(b ? "true" : "false"));
  return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t n) {
  before_value();
  fmt::format_to(std::back_inserter(out_), "{}", n);
  return *this;
}

JsonWriter& JsonWriter::value(std::int64_t n) {
  before_value();
  fmt::format_to(std::back_inserter(out_), "{}", n);
  return *this;
}

JsonWriter& JsonWriter::number(double v, int decimals) {
  before_value();
  append_json_number(out_, v, decimals);
  return *this;
}

JsonWriter& JsonWriter::null() {
  before_value();
  out_.append(std::string_view("null"));
  return *this;
}

}  // namespace inferprof::report
