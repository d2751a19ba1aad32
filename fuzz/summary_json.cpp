// A saved run's summary.json, through both of its readers: `diff` (load_run)
// and `simulate --costs` (load_sim_costs). No requests.csv beside it.
#include "fuzz_support.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/simulate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  const std::string path = fuzz::write_input("summary.json", data, size);
  bool ok = fuzz::expect_error_or_success([&] { (void)load_run(path); });
  ok |= fuzz::expect_error_or_success([&] { (void)load_sim_costs(path); });
  return fuzz::verdict(ok);
}
