// The JSON-lines trace reader (run, simulate, convert): every line through
// TraceReader, strict and with skip_invalid (which reads past bad lines).
#include "fuzz_support.hpp"
#include "inferprof/trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  const std::string path = fuzz::write_input("requests.jsonl", data, size);
  TraceRecord rec;
  const bool ok = fuzz::expect_error_or_success([&] {
    TraceReader::Options o;
    o.buffer_bytes = 4096;  // the default 1 MiB per reader would dominate the time per input
    TraceReader r(path, o);
    while (r.next(rec)) {
    }
  });
  // Read on past bad lines; not part of the verdict, which would be "accepted" for nearly anything.
  fuzz::expect_error_or_success([&] {
    TraceReader::Options o;
    o.skip_invalid = true;
    o.buffer_bytes = 64;  // small, so that lines longer than the buffer take the growing path
    TraceReader r(path, o);
    while (r.next(rec)) {
    }
  });
  return fuzz::verdict(ok);
}
