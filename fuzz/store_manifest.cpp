// The model store's Redis tier: a manifest and its chunks as a poisoned Redis
// would serve them (RedisModelTier::get), as they are and with their
// checksums recomputed, so that mutations reach the size, chunk-count and
// decompression checks behind them. Any answer but a hit or a corrupt
// manifest with its reason (an exception escaping, say) is a finding.
#include <stdexcept>

#include "fuzz_support.hpp"
#include "store/store_detail.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using inferprof::store_detail::RedisModelTier;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  bool accepted = false;
  for (const bool reseal : {false, true}) {
    std::string bytes, why;
    const RedisModelTier::Outcome outcome = inferprof::store_detail::read_stored_model(input, reseal, &bytes, &why);
    if (outcome == RedisModelTier::Outcome::error) throw std::logic_error("fuzz: a memory backend failed: " + why);
    if (outcome == RedisModelTier::Outcome::hit) accepted = true;
    if (outcome == RedisModelTier::Outcome::corrupt && why.empty())
      throw std::logic_error("fuzz: a corrupt manifest without a reason");
  }
  return inferprof::fuzz::verdict(accepted);
}
