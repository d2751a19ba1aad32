// The replicas' shards of a trace (inferprof/trace.hpp).
#include <xxhash.h>

#include "inferprof/trace.hpp"

namespace inferprof {

int shard_of(bool by_key, std::string_view key, std::uint64_t nth, int count) {
  const std::uint64_t n = by_key ? XXH3_64bits(key.data(), key.size()) : nth;
  return static_cast<int>(n % static_cast<std::uint64_t>(count));
}

}  // namespace inferprof
