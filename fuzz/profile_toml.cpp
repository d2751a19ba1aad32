// The profile reader (--profile FILE.toml): toml++ then the schema checks.
#include "fuzz_support.hpp"
#include "inferprof/profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  return inferprof::fuzz::verdict(
      inferprof::fuzz::expect_error_or_success([&] { (void)inferprof::parse_profile(text, "fuzz.toml"); }));
}
