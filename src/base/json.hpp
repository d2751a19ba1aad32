#pragma once
// A small JSON writer on fmt::memory_buffer: enough for summary.json and the
// trace events, with escaping that always yields valid UTF-8 JSON.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof::report {

// Appends `s` as a quoted JSON string. Control characters are \u-escaped and
// invalid UTF-8 bytes become U+FFFD, so a stray byte in a key or an error
// message cannot make the whole file unreadable.
void append_json_string(fmt::memory_buffer& out, std::string_view s);
std::string json_string(std::string_view s);

// Appends a finite number rounded to `decimals` places (-1: shortest exact
// form), or null for NaN and infinity, which JSON cannot hold.
void append_json_number(fmt::memory_buffer& out, double v, int decimals = -1);

// Pretty-printing writer: two-space indent, one member per line; arrays opened
// with compact = true stay on one line (lists of numbers).
class JsonWriter {
 public:
  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array(bool compact = false);
  JsonWriter& end_array();
  JsonWriter& key(std::string_view k);

  JsonWriter& value(std::string_view s);
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(const std::string& s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b);
  JsonWriter& value(std::uint64_t n);
  JsonWriter& value(std::int64_t n);
  JsonWriter& value(int n) { return value(static_cast<std::int64_t>(n)); }
  JsonWriter& value(double v) { return number(v); }
  JsonWriter& number(double v, int decimals = -1);
  JsonWriter& null();

  template <typename T>
  JsonWriter& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }
  JsonWriter& field_number(std::string_view k, double v, int decimals = -1) {
    key(k);
    return number(v, decimals);
  }

  std::string str() const { return fmt::to_string(out_); }

 private:
  struct Level {
    bool first = true;
    bool compact = false;
  };
  void before_value();
  void newline_indent();
  void close(char c);

  fmt::memory_buffer out_;
  std::vector<Level> levels_;
  bool after_key_ = false;
};

}  // namespace inferprof::report
