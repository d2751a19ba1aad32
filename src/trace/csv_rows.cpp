#include "trace/csv_rows.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>

#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

namespace inferprof {

CsvColumns parse_csv_columns(std::string_view text) {
  CsvColumns c;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view part = text.substr(start, end - start);
    const std::size_t eq = part.find('=');
    const std::string_view name = part.substr(0, eq);
    const std::string value(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    const bool known = name == "ts" || name == "key" || name == "size" || name == "image" || name == "seed";
    if (eq == std::string_view::npos || !known || (value.empty() && name == "key"))
      throw bad_input(
          fmt::format("--csv-columns '{}': expected ts=NAME,key=NAME,size=NAME,image=NAME,seed=NAME (any of them; "
                      "an empty NAME for ts or size means no such column)",
                      printable(text)));
    (name == "ts"      ? c.ts
     : name == "key"   ? c.key
     : name == "size"  ? c.size
     : name == "image" ? c.image
                       : c.seed) = value;
    if (name == "ts") c.ts_named = !value.empty();
    if (name == "size") c.size_named = !value.empty();
    start = end + 1;
  }
  if (!c.image.empty() && !c.seed.empty())
    throw bad_input(
        fmt::format("--csv-columns '{}': image and seed both give a row's input: name one of them", printable(text)));
  return c;
}

CsvRows::CsvRows(const std::string& path, const CsvColumns& cols)
    : path_(path), in_(path, std::ios::binary), csv_(in_, path) {
  if (!in_) throw bad_input(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  if (!csv_.next(fields_)) throw bad_input(at_line(path, 1, "empty CSV: expected a header row naming the columns"));
  const std::string header = fmt::format("{}", fmt::join(fields_, ","));
  // A column named twice is ambiguous: which one the user meant is not ours to guess.
  auto find = [&](const std::string& name) {
    if (name.empty()) return -1;
    const int first = report::CsvReader::column(fields_, name);
    for (std::size_t i = static_cast<std::size_t>(first) + 1; first >= 0 && i < fields_.size(); ++i)
      if (fields_[i] == name)
        throw bad_input(at_line(path, 1,
                                fmt::format("the header '{}' has two columns named '{}' (columns {} and {}): rename "
                                            "one",
                                            printable_excerpt(header), printable(name), first + 1, i + 1)));
    return first;
  };
  key_ = find(cols.key);
  if (key_ < 0)
    throw bad_input(at_line(path, 1,
                            fmt::format("no key column '{}' in the header '{}' (choose it with "
                                        "--csv-columns key=NAME)",
                                        printable(cols.key), printable_excerpt(header))));
  ts_ = find(cols.ts);
  size_ = find(cols.size);
  image_ = find(cols.image);
  seed_ = find(cols.seed);
  // A column the user named is wanted: silently running without it would
  // hide a typo (no TTL time, no sizes for a byte limit, no inputs).
  auto require = [&](bool named, int idx, const std::string& name, std::string_view what) {
    if (named && idx < 0)
      throw bad_input(at_line(path, 1,
                              fmt::format("no {} column '{}' in the header '{}' (named by --csv-columns "
                                          "{}={})",
                                          what, printable(name), printable_excerpt(header), what, printable(name))));
  };
  require(cols.ts_named, ts_, cols.ts, "ts");
  require(cols.size_named, size_, cols.size, "size");
  require(!cols.image.empty(), image_, cols.image, "image");
  require(!cols.seed.empty(), seed_, cols.seed, "seed");
}

bool CsvRows::next(Row& out) {
  do {
    if (!csv_.next(fields_)) return false;
  } while (report::CsvReader::blank(fields_));
  const std::uint64_t line = csv_.line();
  if (const auto pos = in_.tellg(); pos >= 0) bytes_ = static_cast<std::uint64_t>(pos);
  const int need = std::max({key_, ts_, size_, image_, seed_});
  if (static_cast<int>(fields_.size()) <= need)
    throw bad_input(at_line(path_, line,
                            fmt::format("{} fields, expected at least {} as in the header", fields_.size(), need + 1)));
  auto field = [&](int i) -> const std::string& { return fields_[static_cast<std::size_t>(i)]; };
  out = Row{};
  out.line = line;
  out.key = field(key_);
  if (ts_ >= 0) {
    const std::string& f = field(ts_);
    double v = 0;
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || p != f.data() + f.size() || !std::isfinite(v))
      throw bad_input(
          at_line(path_, line, fmt::format("timestamp '{}': expected a number (ms)", printable_excerpt(f))));
    // Refused in every trace format, as JSON lines refuse a negative ts_ms.
    if (v < 0) throw bad_input(at_line(path_, line, fmt::format("timestamp '{}': must be >= 0", printable_excerpt(f))));
    out.ts_ms = v;
  }
  auto whole = [&](int i, std::string_view what, std::string_view unit) {
    const std::string& f = field(i);
    std::uint64_t v = 0;
    auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
    if (ec != std::errc() || p != f.data() + f.size() || f.empty())
      throw bad_input(at_line(
          path_, line, fmt::format("{} '{}': expected a non-negative integer{}", what, printable_excerpt(f), unit)));
    return v;
  };
  if (size_ >= 0) out.size = whole(size_, "size", " (bytes)");
  if (seed_ >= 0) out.seed = whole(seed_, "seed", "");
  if (image_ >= 0) {
    out.image = field(image_);
    if (out.image.empty()) throw bad_input(at_line(path_, line, "empty image path: expected a JPEG, PNG or WebP file"));
  }
  return true;
}

}  // namespace inferprof
