#pragma once
#include <string>
#include <string_view>

namespace inferprof {

// User-provided text (a trace's strings, a path, a CSV field) made safe to echo
// in a one-line message: control characters, C1 controls and bytes that are
// not UTF-8 become escapes ("\n", "\x1b", "\u009b"), and so do bidirectional
// controls ("\u202e"), so that the text can neither break the line, drive the
// terminal, nor reorder what is shown after it.
std::string printable(std::string_view text);

}  // namespace inferprof
