#pragma once
// The one L1 -> L2 -> L3 -> compute walk. `run` (the pipeline, real blobs and
// a model) and `simulate` (sizes only, no model) both serve a request through
// walk_hierarchy, so the order of lookups, fills and inserts cannot drift
// between what simulate predicts and what run measures. Header-only and free
// of libtorch: the pipeline plugin instantiates it with its tensors.
#include <cstdint>
#include <optional>
#include <string_view>

#include "inferprof/cache.hpp"  // CacheLevel

namespace inferprof {

// Serves one request through the tiers `steps` has. Steps provides:
//   bool has(CacheLevel)                 the tier is on
//   Phase phase()                        RAII scope of one cache phase (the `cache` span)
//   Scope at(CacheLevel)                 RAII scope of work charged to one tier (its span)
//   Result get_result(CacheLevel)        L1/L2 lookup; falsy: miss
//   void put_result(CacheLevel, const Result&)
//   Input get_input()                    L3 lookup; falsy: miss
//   Input prepare()                      input + preprocess
//   void put_input(const Input&)         L3 insert
//   Output compute(const Input&)         the model
//   bool cacheable(const Output&)        false: served uncached (non-tensor output)
//   bool wants_result()                  the caller wants the served result (verify)
//   Result encode(const Output&)         falsy: cannot be cached
//   void serve(Result)                   hand the served result to the caller
// A hit in a lower tier fills the result tiers above it; a miss in L3 inserts
// the preprocessed input before compute; compute's result goes to L1 then L2.
template <class Steps>
CacheOutcome walk_hierarchy(Steps& s) {
  using L = CacheLevel;
  const bool l1 = s.has(L::l1), l2 = s.has(L::l2), l3 = s.has(L::l3);
  decltype(s.get_input()) x{};
  {
    [[maybe_unused]] auto phase = s.phase();
    if (l1) {
      [[maybe_unused]] auto scope = s.at(L::l1);
      if (auto hit = s.get_result(L::l1)) {
        s.serve(std::move(hit));
        return CacheOutcome::l1_hit;
      }
    }
    if (l2) {
      decltype(s.get_result(L::l2)) hit{};
      {
        [[maybe_unused]] auto scope = s.at(L::l2);
        hit = s.get_result(L::l2);
      }
      if (hit) {
        if (l1) {
          [[maybe_unused]] auto scope = s.at(L::l1);
          s.put_result(L::l1, hit);
        }
        s.serve(std::move(hit));
        return CacheOutcome::l2_hit;
      }
    }
    if (l3) {
      [[maybe_unused]] auto scope = s.at(L::l3);
      x = s.get_input();
    }
  }
  const CacheOutcome outcome = x ? CacheOutcome::l3_hit : CacheOutcome::miss;
  if (!x) {
    x = s.prepare();
    if (l3) {
      [[maybe_unused]] auto phase = s.phase();
      [[maybe_unused]] auto scope = s.at(L::l3);
      s.put_input(x);
    }
  }
  auto out = s.compute(x);
  if (!s.cacheable(out)) return outcome;
  if (l1 || l2 || s.wants_result()) {
    [[maybe_unused]] auto phase = s.phase();
    decltype(s.encode(out)) result{};
    {
      // Encoding the output is the price of caching it: charged to the first tier that stores it.
      [[maybe_unused]] auto scope = s.at(l1 ? L::l1 : L::l2);
      result = s.encode(out);
      if (result && l1) s.put_result(L::l1, result);
    }
    if (result && l2) {
      [[maybe_unused]] auto scope = s.at(L::l2);
      s.put_result(L::l2, result);
    }
    s.serve(std::move(result));
  }
  return outcome;
}

}  // namespace inferprof
