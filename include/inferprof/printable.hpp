#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace inferprof {

// User-provided text (a trace's strings, a path, a CSV field) made safe to echo
// in a one-line message: control characters, C1 controls and bytes that are
// not UTF-8 become escapes ("\n", "\x1b", "\u009b"), and so do bidirectional
// controls ("\u202e"), so that the text can neither break the line, drive the
// terminal, nor reorder what is shown after it.
std::string printable(std::string_view text);

// How much of an input an error message quotes (kQuoteBytes bytes).
inline constexpr std::size_t kQuoteBytes = 200;
// printable() of at most the first `max_bytes` bytes of `text` (cut before a
// UTF-8 sequence, never inside one), "..." after it when it was cut: what an
// error quotes of a cell or a line, however long the input.
std::string printable_excerpt(std::string_view text, std::size_t max_bytes = kQuoteBytes);

}  // namespace inferprof
