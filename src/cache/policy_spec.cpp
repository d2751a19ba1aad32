// A policy as a spec spells it: its name and, for the policies that take
// them, parameters in parentheses ("s3fifo(small=0.2,threshold=1)").
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"

namespace inferprof {

namespace {

struct ParamInfo {
  Policy policy;
  std::string_view key;
  double PolicyParams::*real;  // or
  unsigned PolicyParams::*whole;
  double lo, hi;
  bool hi_open;  // [lo, hi) rather than [lo, hi]
};

constexpr ParamInfo kParams[] = {
    {Policy::clock, "bits", nullptr, &PolicyParams::bits, 1, 8, false},
    {Policy::s3fifo, "small", &PolicyParams::small, nullptr, 0, 1, true},
    {Policy::s3fifo, "ghost", &PolicyParams::ghost, nullptr, 0, 4, false},
    {Policy::s3fifo, "threshold", nullptr, &PolicyParams::threshold, 1, 255, false},
    {Policy::wtinylfu, "window", &PolicyParams::window, nullptr, 0, 1, true},
    {Policy::wtinylfu, "protected", &PolicyParams::protected_share, nullptr, 0, 1, false},
    {Policy::twoq, "in", &PolicyParams::in_share, nullptr, 0, 1, true},
    {Policy::twoq, "out", &PolicyParams::out_share, nullptr, 0, 4, false},
    {Policy::slru, "segments", nullptr, &PolicyParams::segments, 1, 16, false},
};

std::string keys_of(Policy p) {
  std::string out;
  for (const auto& k : kParams)
    if (k.policy == p) out += fmt::format("{}{}", out.empty() ? "" : ", ", k.key);
  return out;
}

// Sets one KEY=VALUE; `seen` holds the keys set so far (each may be given once).
void set_param(Policy p, std::string_view item, PolicyParams& params, std::string_view what,
               std::vector<std::string_view>& seen) {
  const std::size_t eq = item.find('=');
  const std::string_view key = item.substr(0, eq);
  const ParamInfo* info = nullptr;
  for (const auto& k : kParams)
    if (k.policy == p && k.key == key) info = &k;
  if (info != nullptr && std::find(seen.begin(), seen.end(), info->key) != seen.end())
    throw bad_input(fmt::format("{}: {}'s {} is given twice (give each parameter once)", what, policy_name(p), key));
  if (info != nullptr) seen.push_back(info->key);
  if (info == nullptr) {
    const std::string keys = keys_of(p);
    throw bad_input(fmt::format("{}: policy {} has no parameter '{}'{}", what, policy_name(p), key,
                                keys.empty() ? " (it takes none)" : fmt::format(" (expected {})", keys)));
  }
  const std::string_view value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
  double v = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  const bool whole = info->whole != nullptr;
  const bool ok = !value.empty() && ec == std::errc() && end == value.data() + value.size() && std::isfinite(v) &&
                  v >= info->lo && (info->hi_open ? v < info->hi : v <= info->hi) && (!whole || v == std::floor(v));
  if (!ok) {
    throw bad_input(fmt::format("{}: {}'s {} must be {} in [{:g}, {:g}{}, got '{}'", what, policy_name(p), key,
                                whole ? "a whole number" : "a number", info->lo, info->hi, info->hi_open ? ")" : "]",
                                value));
  }
  if (whole) {
    params.*(info->whole) = static_cast<unsigned>(v);
  } else {
    params.*(info->real) = v;
  }
}

}  // namespace

std::string_view policy_name(Policy p) {
  return enum_name(p);
}

std::optional<Policy> parse_policy(std::string_view name) {
  return parse_enum<Policy>(name);
}

Policy parse_policy_spec(std::string_view text, PolicyParams& params, std::string_view what) {
  const std::size_t open = text.find('(');
  const std::string_view name = text.substr(0, open);
  const std::optional<Policy> p = parse_policy(name);
  if (!p) throw bad_input(fmt::format("{}: unknown policy '{}' (expected {})", what, name, enum_choices<Policy>()));
  if (open == std::string_view::npos) return *p;
  if (text.back() != ')' || open + 2 > text.size()) {
    throw bad_input(
        fmt::format("{}: expected {}(KEY=VALUE,...), e.g. s3fifo(small=0.1,threshold=2), got '{}'", what, name, text));
  }
  std::string_view rest = text.substr(open + 1, text.size() - open - 2);
  std::vector<std::string_view> seen;
  while (true) {
    const std::size_t comma = rest.find(',');
    set_param(*p, rest.substr(0, comma), params, what, seen);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return *p;
}

std::string policy_label(Policy p, const PolicyParams& params) {
  const PolicyParams defaults;
  std::string inner;
  for (const auto& k : kParams) {
    if (k.policy != p) continue;
    const double v = k.whole ? params.*(k.whole) : params.*(k.real);
    const double d = k.whole ? defaults.*(k.whole) : defaults.*(k.real);
    if (v != d) inner += fmt::format("{}{}={:g}", inner.empty() ? "" : ",", k.key, v);
  }
  return inner.empty() ? std::string(policy_name(p)) : fmt::format("{}({})", policy_name(p), inner);
}

}  // namespace inferprof
