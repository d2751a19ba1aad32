// A cache configuration ("l1,l2") resolved into its tiers: the profile's
// [cache.lN], the built-in defaults, --tier and --redis (profile.hpp).
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "inferprof/enum_names.hpp"
#include "inferprof/error.hpp"
#include "inferprof/profile.hpp"

namespace inferprof {

namespace fs = std::filesystem;

std::vector<TierSpec> resolve_tiers(const Profile& profile, const std::string& which,
                                    const std::vector<TierSpec>& overrides, const std::string& redis_url,
                                    const std::string& scratch_dir) {
  std::vector<TierSpec> out;
  if (which.empty() || which == "none") return out;
  std::vector<CacheLevel> named;
  std::string part;
  for (std::size_t i = 0; i <= which.size(); ++i) {
    if (i == which.size() || which[i] == ',' || which[i] == '+') {
      const std::optional<CacheLevel> level = parse_enum<CacheLevel>(part);
      if (!level)
        throw bad_input(
            fmt::format("cache configuration '{}': expected none or tiers l1, l2, l3 joined by commas "
                        "(e.g. l1,l2)",
                        which));
      if (std::find(named.begin(), named.end(), *level) != named.end())
        throw bad_input(fmt::format("cache configuration '{}' names {} twice", which, part));
      named.push_back(*level);
      part.clear();
    } else {
      part += which[i];
    }
  }
  for (CacheLevel tier : {CacheLevel::l1, CacheLevel::l2, CacheLevel::l3}) {
    if (std::find(named.begin(), named.end(), tier) == named.end()) continue;
    const std::optional<TierSpec>& configured = tier == CacheLevel::l1   ? profile.cache.l1
                                                : tier == CacheLevel::l2 ? profile.cache.l2
                                                                         : profile.cache.l3;
    TierSpec spec;
    if (configured) {
      spec = *configured;
    } else {
      // The built-in tiers: a small L1 and a large L2 in this process, L3 on LMDB.
      spec.tier = tier;
      spec.policy = Policy::lru;
      spec.max_entries = tier == CacheLevel::l1 ? 1000 : tier == CacheLevel::l2 ? 100000 : 0;
      spec.backend = tier == CacheLevel::l3 ? TierBackend::lmdb : TierBackend::memory;
    }
    // --tier sets the policy and limits; where the tier lives stays as configured.
    for (const TierSpec& o : overrides)
      if (o.tier == spec.tier) {
        spec.policy = o.policy;
        spec.params = o.params;
        spec.max_entries = o.max_entries;
        spec.max_bytes = o.max_bytes;
        spec.ttl_s = o.ttl_s;
      }
    if (!redis_url.empty() && (tier == CacheLevel::l2 || (tier == CacheLevel::l3 && !profile.cache.l3))) {
      spec.backend = TierBackend::redis;
      spec.location = redis_url;
    }
    if (spec.backend == TierBackend::redis && spec.location.empty())
      throw bad_input(
          fmt::format("{} is on Redis but no URL is given: use --redis URL or INFERPROF_REDIS_URL, or "
                      "url = \"redis://host:port\" in [cache.{}]",
                      enum_name(tier), enum_name(tier)));
    if (spec.backend == TierBackend::lmdb && spec.location.empty() && !scratch_dir.empty())
      spec.location = (fs::path(scratch_dir) / "l3.lmdb").string();
    out.push_back(spec);
  }
  return out;
}

}  // namespace inferprof
