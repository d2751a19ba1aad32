// stacks.folded: Brendan Gregg's folded stacks, "request;compute;aten::addmm 123".
#include <algorithm>
#include <iterator>
#include <numeric>

#include "report/streams.hpp"

namespace inferprof {
namespace report {

std::vector<std::pair<std::string, std::uint64_t>> round_folded(
    std::vector<std::pair<std::string, std::int64_t>> ns_values, std::int64_t total_ns) {
  // Negative values (a parent shorter than its children, overhead's rounding
  // residue) have no place in a flame graph; the remainder absorbs them.
  ns_values.erase(std::remove_if(ns_values.begin(), ns_values.end(), [](const auto& e) { return e.second <= 0; }),
                  ns_values.end());
  std::sort(ns_values.begin(), ns_values.end());
  const std::size_t n = ns_values.size();
  const std::int64_t target = total_ns > 0 ? (total_ns + 500) / 1000 : 0;

  std::vector<std::int64_t> us(n);
  std::int64_t assigned = 0;
  for (std::size_t i = 0; i < n; ++i) {
    us[i] = ns_values[i].second / 1000;
    assigned += us[i];
  }
  // Largest remainder: hand out the missing microseconds to the values that
  // lost most to truncation (ties by path, so output is deterministic).
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ns_values[a].second % 1000 > ns_values[b].second % 1000;
  });
  std::int64_t deficit = target - assigned;
  while (deficit > 0 && n > 0) {
    for (std::size_t k = 0; k < n && deficit > 0; ++k, --deficit)
      ++us[order[k]];
  }
  // Only reachable when dropped negative values made the rest exceed the total:
  // take back from the smallest remainders first.
  while (deficit < 0) {
    bool took = false;
    for (std::size_t k = n; k-- > 0 && deficit < 0;) {
      if (us[order[k]] > 0) {
        --us[order[k]];
        ++deficit;
        took = true;
      }
    }
    if (!took) break;
  }

  std::vector<std::pair<std::string, std::uint64_t>> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    if (us[i] > 0) out.emplace_back(std::move(ns_values[i].first), static_cast<std::uint64_t>(us[i]));
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
