#pragma once
// What the reporters of `run --replicas N` (replicas_<format>.cpp) share.
#include <fmt/format.h>

#include <string>

#include "inferprof/replicas_result.hpp"

namespace inferprof::report::replicas_parts {

// Milliseconds with one decimal: "12.3 ms".
inline std::string ms(double v) {
  return fmt::format("{:.1f} ms", v);
}

// A replica's requests missing from its shard of the trace ("?" when the trace was not read).
inline std::string lost_of(const ReplicaResult& r) {
  if (r.share < 0) return "?";
  const auto share = static_cast<std::uint64_t>(r.share);
  return std::to_string(share > r.requests ? share - r.requests : 0);
}

// " · 0 lost", " · 12 lost · 3 duplicated": what the shards add up to ("" when the trace was not read).
inline std::string accounting(const ReplicaSummary& s) {
  std::string out = s.lost >= 0 ? fmt::format(" · {} lost", s.lost) : "";
  if (s.duplicated > 0) out += fmt::format(" · {} duplicated", s.duplicated);
  return out;
}

}  // namespace inferprof::report::replicas_parts
