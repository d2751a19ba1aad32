// The cache-trace CSV reader (simulate, convert): default columns, and
// user-named ones with the size column required.
#include "fuzz_support.hpp"
#include "inferprof/simulate.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  const std::string path = fuzz::write_input("trace.csv", data, size);
  auto read_all = [&](const CsvColumns& cols) {
    return fuzz::expect_error_or_success([&] {
      auto src = open_sim_source(path, cols);
      SimRecord r;
      while (src->next(r)) {
      }
    });
  };
  bool ok = read_all(CsvColumns{});
  CsvColumns named;
  fuzz::expect_error_or_success([&] { named = parse_csv_columns("ts=time,key=obj,size=bytes"); });
  ok |= read_all(named);
  return fuzz::verdict(ok);
}
