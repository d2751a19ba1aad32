#include "base/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iterator>

namespace inferprof::report {

std::string group_thousands(std::uint64_t n) {
  std::string digits = fmt::format("{}", n);
  std::string out;
  out.reserve(digits.size() + digits.size() / 3);
  const std::size_t lead = digits.size() % 3;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i != 0 && (i + 3 - lead) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string grouped_fixed(double v, int decimals) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  std::string s = fmt::format("{:.{}f}", std::fabs(v), decimals);
  const auto dot = s.find('.');
  const std::string whole = s.substr(0, dot);
  const std::string frac = dot == std::string::npos ? "" : s.substr(dot);
  std::string grouped = group_thousands(std::strtoull(whole.c_str(), nullptr, 10));
  // Print "-0.0" as "0.0": a sign on a value that rounds to zero is noise.
  const bool negative = v < 0 && s.find_first_not_of("0.") != std::string::npos;
  return (negative ? "-" : "") + grouped + frac;
}

std::string human_duration_us(double us) {
  if (!std::isfinite(us)) return "n/a";
  const double a = std::fabs(us);
  // Thresholds sit where the next unit's rounding would show "1000.0 µs" or "10.000 ms".
  if (a < 0.05) return "0 µs";
  if (a < 999.95) return fmt::format("{:.1f} µs", us);
  if (a < 9999.5) return fmt::format("{:.3f} ms", us / 1e3);
  if (a < 99995) return fmt::format("{:.2f} ms", us / 1e3);
  if (a < 999950) return fmt::format("{:.1f} ms", us / 1e3);
  return fmt::format("{:.2f} s", us / 1e6);
}

std::string human_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr const char* kUnits[] = {"KB", "MB", "GB", "TB", "PB", "EB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  v /= 1024;
  while (v >= 1023.95 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, kUnits[u]);
}

std::string share_text(double share) {
  return fmt::format("{:.1f}%", share * 100);
}

void append_us3(fmt::memory_buffer& out, std::int64_t ns) {
  // Unsigned magnitude so INT64_MIN cannot overflow on negation.
  const bool negative = ns < 0;
  const std::uint64_t mag =
      negative ? std::uint64_t{0} - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  // By hand, not through a format string: the report streams call this ~30
  // times a request (docs/performance.md, the overhead breakdown).
  if (negative) out.push_back('-');
  append_uint(out, mag / 1000);
  const auto frac = static_cast<unsigned>(mag % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, digits + 4);
}

std::string us3(std::int64_t ns) {
  fmt::memory_buffer out;
  append_us3(out, ns);
  return fmt::to_string(out);
}

void append_csv_field(fmt::memory_buffer& out, std::string_view s) {
  const std::size_t after = s.find_first_not_of('\'');
  const bool formula = after != std::string_view::npos && csv_formula_start(s[after]);
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    if (formula) out.push_back('\'');
    out.append(s);
    return;
  }
  out.push_back('"');
  if (formula) out.push_back('\'');
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
}

std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  std::size_t len = 0;
  std::uint32_t cp = 0;
  if (b0 < 0x80) return 1;
  if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1Fu;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0Fu;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07u;
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b & 0x3Fu);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid too.
  static constexpr std::uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return len;
}

std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

std::string pad_left(std::string_view s, std::size_t width) {
  const std::size_t w = display_width(s);
  std::string out(w < width ? width - w : 0, ' ');
  out.append(s);
  return out;
}

std::string pad_right(std::string_view s, std::size_t width) {
  const std::size_t w = display_width(s);
  std::string out(s);
  if (w < width) out.append(width - w, ' ');
  return out;
}

std::string truncate_display(std::string_view s, std::size_t width) {
  if (display_width(s) <= width) return std::string(s);
  if (width < 2) return std::string(width, '.');
  const std::size_t keep = width - 2;
  std::size_t cps = 0;
  std::size_t i = 0;
  for (; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (cps == keep) break;
      ++cps;
    }
  }
  return std::string(s.substr(0, i)) + "..";
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::string join_abbreviated(const std::vector<std::string>& items, std::size_t shown) {
  std::string out;
  for (std::size_t i = 0; i < items.size() && i < shown; ++i)
    out += (i == 0 ? "" : ", ") + items[i];
  if (items.size() > shown) out += fmt::format(", ... and {} more", items.size() - shown);
  return out;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(sep, start);
    parts.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string base_name(const std::string& path) {
  std::string p = path;
  while (p.size() > 1 && p.back() == '/')
    p.pop_back();
  const auto slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

std::string markdown_cell(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '|':
      case '~':
        out += '\\';
        out += c;
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string markdown_table(const std::vector<std::vector<std::string>>& cells, const std::vector<std::size_t>& left,
                           const std::vector<std::pair<std::size_t, std::size_t>>& strong) {
  std::string out;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    out += '|';
    for (std::size_t c = 0; c < cells[i].size(); ++c) {
      const bool bold = std::find(strong.begin(), strong.end(), std::pair{i, c}) != strong.end();
      out += bold ? " **" + markdown_cell(cells[i][c]) + "** |" : ' ' + markdown_cell(cells[i][c]) + " |";
    }
    out += '\n';
    if (i == 0) {
      out += '|';
      for (std::size_t c = 0; c < cells[0].size(); ++c)
        out += std::find(left.begin(), left.end(), c) != left.end() ? ":--|" : "--:|";
      out += '\n';
    }
  }
  return out;
}

std::string render_grid(const std::vector<std::vector<std::string>>& cells, const std::vector<std::size_t>& left) {
  std::vector<std::size_t> width;
  for (const auto& line : cells) {
    if (line.size() > width.size()) width.resize(line.size(), 0);
    for (std::size_t c = 0; c < line.size(); ++c)
      width[c] = std::max(width[c], display_width(line[c]));
  }
  std::string out;
  for (const auto& line : cells) {
    std::string text;
    for (std::size_t c = 0; c < line.size(); ++c) {
      if (c > 0) text += "  ";
      const bool l = std::find(left.begin(), left.end(), c) != left.end();
      text += l ? pad_right(line[c], width[c]) : pad_left(line[c], width[c]);
    }
    while (!text.empty() && text.back() == ' ')
      text.pop_back();
    out += text + '\n';
  }
  return out;
}

}  // namespace inferprof::report
