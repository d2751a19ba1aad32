// service_times.csv (`sweep --out DIR --service-times`): what the queueing
// model is fed, so that it can be rerun outside the tool. One row per replay
// of a configuration and request: the request's arrival at 1× (the step's
// arrival is it over the load), its service time (start of service to end)
// and whether it counts in the p99 (false before --measure-after's window).
#include <fmt/format.h>

#include <iterator>

#include "base/text.hpp"
#include "inferprof/sweep.hpp"

namespace inferprof {

std::string render_service_times_csv(const SweepResult& r, const std::vector<SweepServiceTimes>& models) {
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  fmt::format_to(it, "caches,replay,load,request,unit_arrival_us,service_us,measured\n");
  for (std::size_t i = 0; i < r.curves.size() && i < models.size(); ++i) {
    const SweepServiceTimes& m = models[i];
    // replay: the configuration's replays in the order run (a step's tries
    // each have one; bisection steps come after the others).
    for (std::size_t replay = 0; replay < m.service_us.size(); ++replay)
      for (std::size_t k = 0; k < m.service_us[replay].size(); ++k) {
        report::append_csv_field(out, r.curves[i].name);
        fmt::format_to(it, ",{},{:g},{},{:.3f},{:.3f},{}\n", replay, m.loads[replay], k, m.unit_arrivals_us[k],
                       m.service_us[replay][k], m.measured[k] ? 1 : 0);
      }
  }
  return fmt::to_string(out);
}

}  // namespace inferprof
