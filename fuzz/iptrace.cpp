// The binary .iptrace reader (simulate), picked by its magic like the CLI does.
#include "fuzz_support.hpp"
#include "inferprof/simulate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  const std::string path = fuzz::write_input("trace.iptrace", data, size);
  const bool ok = fuzz::expect_error_or_success([&] {
    auto src = open_sim_source(path);
    SimRecord r;
    while (src->next(r)) {
    }
  });
  return fuzz::verdict(ok);
}
