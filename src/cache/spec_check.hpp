#pragma once
// The part of validate_tier_spec the tier factories apply: what the policy
// itself needs. Tier and backend names are the caller's business (a model
// store may use a memory tier under its own name).
#include <string_view>

#include "inferprof/cache.hpp"

namespace inferprof::cache_detail {

// Throws Error(bad_input) starting with `what`.
void check_policy_limits(const TierSpec& spec, std::string_view what);

}  // namespace inferprof::cache_detail
