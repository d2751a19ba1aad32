#include "inferprof/error.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "inferprof/printable.hpp"

namespace inferprof {

std::string at_line(std::string_view file, std::size_t line, std::string_view what) {
  return fmt::format("{}:{}: {}", file, line, what);
}

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (RFC 3629, table 3-7), 0 if none.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  auto at = [&](std::size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  auto cont = [&](std::size_t k, unsigned lo = 0x80, unsigned hi = 0xBF) { return at(k) >= lo && at(k) <= hi; };
  const unsigned c = at(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c == 0xE0) return cont(1, 0xA0) && cont(2) ? 3 : 0;
  if (c == 0xED) return cont(1, 0x80, 0x9F) && cont(2) ? 3 : 0;
  if (c >= 0xE1 && c <= 0xEF) return cont(1) && cont(2) ? 3 : 0;
  if (c == 0xF0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
  if (c >= 0xF1 && c <= 0xF3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
  if (c == 0xF4) return cont(1, 0x80, 0x8F) && cont(2) && cont(3) ? 4 : 0;
  return 0;
}

// The code point of the three-byte UTF-8 sequence at text[i] (already validated).
char32_t code_point3(std::string_view text, std::size_t i) {
  return (static_cast<char32_t>(static_cast<unsigned char>(text[i]) & 0x0F) << 12) |
         (static_cast<char32_t>(static_cast<unsigned char>(text[i + 1]) & 0x3F) << 6) |
         static_cast<char32_t>(static_cast<unsigned char>(text[i + 2]) & 0x3F);
}

// LRM, RLM, the embeddings and overrides (LRE..RLO) and the isolates (LRI..PDI).
bool is_bidi_control(char32_t cp) {
  return cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
      ++i;
    } else if (c == '\n') {
      out += "\\n";
      ++i;
    } else if (c == '\r') {
      out += "\\r";
      ++i;
    } else if (c == '\t') {
      out += "\\t";
      ++i;
    } else if (const std::size_t n = c >= 0x80 ? utf8_length(text, i) : 0; n == 0) {
      out += fmt::format("\\x{:02x}", c);
      ++i;
    } else if (c == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[i + 1]));  // C1 control (U+0080..U+009F)
      i += 2;
    } else if (const char32_t cp = n == 3 ? code_point3(text, i) : 0; is_bidi_control(cp)) {
      // A bidirectional control reorders what follows it on the screen (U+202E shows "exe.txt" as "txt.exe").
      out += fmt::format("\\u{:04x}", static_cast<std::uint32_t>(cp));
      i += n;
    } else {
      out.append(text.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string printable_excerpt(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return printable(text);
  std::size_t cut = max_bytes;
  // Back to the start of a UTF-8 sequence (at most three continuation bytes), so the cut splits none.
  for (int k = 0; k < 3 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++k)
    --cut;
  return printable(text.substr(0, cut)) + "...";
}

}  // namespace inferprof
