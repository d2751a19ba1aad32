// A model store's ROOT/index.json (what an http remote lists).
#include "fuzz_support.hpp"
#include "store/store_detail.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  return inferprof::fuzz::verdict(inferprof::fuzz::expect_error_or_success(
      [&] { (void)inferprof::store_detail::parse_index_json(text, "fuzz/index.json"); }));
}
