// stacks.folded: Brendan Gregg's folded stacks, "request;compute;aten::addmm 123".
#include <algorithm>
#include <iterator>
#include <limits>
#include <numeric>

#include "report/streams.hpp"

namespace inferprof {
namespace report {

std::vector<std::pair<std::string, std::uint64_t>> round_folded(std::vector<std::pair<std::string, NanoSum>> ns_values,
                                                                NanoSum total_ns) {
  // Negative values (a parent shorter than its children, overhead's rounding
  // residue) have no place in a flame graph; the remainder absorbs them.
  ns_values.erase(std::remove_if(ns_values.begin(), ns_values.end(), [](const auto& e) { return e.second <= 0; }),
                  ns_values.end());
  std::sort(ns_values.begin(), ns_values.end());
  const std::size_t n = ns_values.size();
  const NanoSum target = total_ns > 0 ? (total_ns + 500) / 1000 : 0;

  std::vector<NanoSum> us(n);
  NanoSum assigned = 0;
  for (std::size_t i = 0; i < n; ++i) {
    us[i] = ns_values[i].second / 1000;
    assigned += us[i];
  }
  // Largest remainder: hand out the missing microseconds to the values that
  // lost most to truncation (ties by path, so output is deterministic), in
  // turns: each gets deficit / n, the first deficit % n one more. (Values
  // that do not add up to the total, as a merged requests.csv may hold, can
  // leave a deficit of any size: it is handed out at once, not a µs a turn.)
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ns_values[a].second % 1000 > ns_values[b].second % 1000;
  });
  NanoSum deficit = target - assigned;
  if (deficit > 0 && n > 0) {
    const NanoSum each = deficit / static_cast<NanoSum>(n), rest = deficit % static_cast<NanoSum>(n);
    for (std::size_t k = 0; k < n; ++k)
      us[order[k]] += each + (static_cast<NanoSum>(k) < rest ? 1 : 0);
    deficit = 0;
  }
  // Only reachable when dropped negative values made the rest exceed the total:
  // take back from the smallest remainders first, one from each value left a
  // turn. Whole turns are taken at once (as many as the smallest value allows),
  // the last turn one by one.
  while (deficit < 0) {
    NanoSum positive = 0, smallest = 0;
    for (const NanoSum v : us)
      if (v > 0) smallest = positive++ == 0 ? v : std::min(smallest, v);
    if (positive == 0) break;
    const NanoSum turns = std::min(smallest, -deficit / positive);
    if (turns > 0) {
      for (NanoSum& v : us)
        if (v > 0) v -= turns;
      deficit += turns * positive;
      continue;
    }
    for (std::size_t k = n; k-- > 0 && deficit < 0;) {
      if (us[order[k]] > 0) {
        --us[order[k]];
        ++deficit;
      }
    }
  }

  std::vector<std::pair<std::string, std::uint64_t>> out;
  out.reserve(n);
  constexpr auto kMax = static_cast<NanoSum>(std::numeric_limits<std::uint64_t>::max());
  for (std::size_t i = 0; i < n; ++i)
    if (us[i] > 0) out.emplace_back(std::move(ns_values[i].first), static_cast<std::uint64_t>(std::min(us[i], kMax)));
  return out;
}

}  // namespace report

std::string render_folded(const std::vector<std::pair<std::string, std::uint64_t>>& folded) {
  fmt::memory_buffer out;
  for (const auto& [path, value] : folded)
    fmt::format_to(std::back_inserter(out), "{} {}\n", path, value);
  return fmt::to_string(out);
}

}  // namespace inferprof
