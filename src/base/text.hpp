#pragma once
// Formatting helpers shared by the renderers: units for people, exact decimal
// microseconds for machines, CSV quoting, padding by display width.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace inferprof::report {

// "1,234,567"
std::string group_thousands(std::uint64_t n);
// Fixed decimals with grouped integer part: "1,923.1", "-12.50".
std::string grouped_fixed(double v, int decimals);

// Durations for people: "0 µs", "212.3 µs", "1.234 ms", "12.31 ms", "123.4 ms", "1.52 s".
std::string human_duration_us(double us);
// "512 B", "24.1 KB", "3.2 MB" (1 KB = 1024 B, as ls -h), up to "16.0 EB" (2^64 - 1).
std::string human_bytes(std::uint64_t bytes);
// A share (0.123) as a percentage with one decimal: "12.3%".
std::string share_text(double share);

// Nanoseconds as microseconds with exactly 3 decimals, computed in integers so
// that large timestamps keep their last digit: 1234567 -> "1234.567".
void append_us3(fmt::memory_buffer& out, std::int64_t ns);
// `n` in decimal, appended (no format string to parse: the streams' hot path).
inline void append_uint(fmt::memory_buffer& out, std::uint64_t n) {
  const fmt::format_int digits(n);
  out.append(digits.data(), digits.data() + digits.size());
}
std::string us3(std::int64_t ns);

// Whether a text cell starting with `c` would be a formula in a spreadsheet ('=', '+', '-', '@'; a tab or a CR
// before one).
constexpr bool csv_formula_start(char c) {
  return c == '=' || c == '+' || c == '-' || c == '@' || c == '\t' || c == '\r';
}
// A text cell, RFC 4180: quoted (with doubled quotes) when it holds a comma,
// quote, CR or LF. A cell that would start a spreadsheet formula (quotes, if
// any, then a csv_formula_start character) gets one "'" in front, which a
// spreadsheet shows as text; csv_text (base/csv_io.hpp) takes it off again, so
// what inferprof reads back (requests.csv's keys) is what it wrote. Numbers
// are written as they are ("-1.5"), not through here.
void append_csv_field(fmt::memory_buffer& out, std::string_view s);

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is invalid.
std::size_t utf8_sequence_length(std::string_view s, std::size_t i);

// Width in terminal columns, counting one per UTF-8 code point ("µs" is 2).
std::size_t display_width(std::string_view s);
// The one markdown escaper (GitHub markdown), for text and table cells alike:
// '\\', '`', '*', '_', '[', ']', '|', '~' are backslash-escaped, '<', '>', '&'
// become entities (no HTML, no entity gets through), CR and LF a space (they
// would end a cell, a table or a quote).
std::string markdown_cell(std::string_view s);
std::string pad_left(std::string_view s, std::size_t width);   // right-aligned
std::string pad_right(std::string_view s, std::size_t width);  // left-aligned
// Keeps at most `width` columns, ending in ".." when cut; never splits a code point.
std::string truncate_display(std::string_view s, std::size_t width);

// The parts of `text` between `sep`s, empty ones kept ("a,,b" has three; "" has one).
std::vector<std::string> split(std::string_view text, char sep);

// Items joined by ", ", the first `shown` of them and then "... and N more"
// when there are more: "1, 2, ..., 10, ... and 4085 more" (a message stays one short line).
std::string join_abbreviated(const std::vector<std::string>& items, std::size_t shown = 10);

// "dir/name", without doubling a trailing slash.
std::string join_path(const std::string& dir, const std::string& name);
std::string base_name(const std::string& path);

// Columns padded to their widest cell, two spaces apart, right-aligned except
// those in `left` (column indexes); trailing blanks trimmed.
std::string render_grid(const std::vector<std::vector<std::string>>& cells, const std::vector<std::size_t>& left);
// The same cells as a GitHub markdown table: the first row is the header,
// columns in `left` are left-aligned, the others right-aligned; every cell
// goes through markdown_cell, and those in `strong` ({row, column}) are bold.
std::string markdown_table(const std::vector<std::vector<std::string>>& cells, const std::vector<std::size_t>& left,
                           const std::vector<std::pair<std::size_t, std::size_t>>& strong = {});

inline constexpr std::size_t kTableOps = 10;  // top ops shown under the table

}  // namespace inferprof::report
