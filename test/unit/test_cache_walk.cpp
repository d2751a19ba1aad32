// The one cache-hierarchy walk (src/cache/hierarchy.hpp): the order of
// lookups, fills and inserts that run and simulate share.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cache/hierarchy.hpp"

using namespace inferprof;

namespace {

const char* level_name(CacheLevel l) {
  return l == CacheLevel::l1 ? "l1" : l == CacheLevel::l2 ? "l2" : "l3";
}

// Tiers as sets of keys; every call is logged, so the test reads the walk's order.
struct WalkRecorder {
  std::set<CacheLevel> on;
  std::map<CacheLevel, bool> holds;  // the request's key is in that tier
  bool want = false;
  bool uncacheable = false;
  std::vector<std::string> log;
  int served = 0;

  struct Scope {
    std::vector<std::string>* log;
    std::string name;
    ~Scope() { log->push_back("/" + name); }
  };
  bool has(CacheLevel l) const { return on.count(l) > 0; }
  Scope phase() {
    log.push_back("cache");
    return Scope{&log, "cache"};
  }
  Scope at(CacheLevel l) {
    log.push_back(level_name(l));
    return Scope{&log, level_name(l)};
  }
  bool get_result(CacheLevel l) {
    log.push_back(std::string("get ") + level_name(l));
    return holds[l];
  }
  void put_result(CacheLevel l, bool) { log.push_back(std::string("put ") + level_name(l)); }
  bool get_input() {
    log.push_back("get l3");
    return holds[CacheLevel::l3];
  }
  bool prepare() {
    log.push_back("prepare");
    return true;
  }
  void put_input(bool) { log.push_back("put l3"); }
  bool compute(bool) {
    log.push_back("compute");
    return true;
  }
  bool cacheable(bool) const { return !uncacheable; }
  bool wants_result() const { return want; }
  bool encode(bool) {
    log.push_back("encode");
    return true;
  }
  void serve(bool) { ++served; }
};

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : " ") + x;
  return s;
}

}  // namespace

TEST_CASE("cache walk: outcome names round-trip and follow the served[] order") {
  for (int i = 0; i < kCacheOutcomes; ++i) {
    const auto o = static_cast<CacheOutcome>(i);
    CHECK(parse_outcome(outcome_name(o)) == o);
  }
  CHECK(outcome_name(CacheOutcome::l3_hit) == "l3_hit");
  CHECK(static_cast<int>(CacheOutcome::miss) == 3);
  CHECK_FALSE(parse_outcome("hit").has_value());
}

TEST_CASE("cache walk: a miss through every tier prepares, inserts L3 first, then computes and fills L1 then L2") {
  WalkRecorder r;
  r.on = {CacheLevel::l1, CacheLevel::l2, CacheLevel::l3};
  CHECK(walk_hierarchy(r) == CacheOutcome::miss);
  CHECK(joined(r.log) ==
        "cache l1 get l1 /l1 l2 get l2 /l2 l3 get l3 /l3 /cache prepare cache l3 put l3 /l3 /cache compute "
        "cache l1 encode put l1 /l1 l2 put l2 /l2 /cache");
  CHECK(r.served == 1);
}

TEST_CASE("cache walk: an L1 hit stops at L1") {
  WalkRecorder r;
  r.on = {CacheLevel::l1, CacheLevel::l2, CacheLevel::l3};
  r.holds[CacheLevel::l1] = true;
  CHECK(walk_hierarchy(r) == CacheOutcome::l1_hit);
  CHECK(joined(r.log) == "cache l1 get l1 /l1 /cache");
}

TEST_CASE("cache walk: an L2 hit fills L1 and computes nothing") {
  WalkRecorder r;
  r.on = {CacheLevel::l1, CacheLevel::l2};
  r.holds[CacheLevel::l2] = true;
  CHECK(walk_hierarchy(r) == CacheOutcome::l2_hit);
  CHECK(joined(r.log) == "cache l1 get l1 /l1 l2 get l2 /l2 l1 put l1 /l1 /cache");
}

TEST_CASE("cache walk: an L3 hit skips prepare and the L3 insert, still computes and fills the result tiers") {
  WalkRecorder r;
  r.on = {CacheLevel::l2, CacheLevel::l3};
  r.holds[CacheLevel::l3] = true;
  CHECK(walk_hierarchy(r) == CacheOutcome::l3_hit);
  // Without L1 the encode is charged to L2 (a span of its own before the insert's).
  CHECK(joined(r.log) == "cache l2 get l2 /l2 l3 get l3 /l3 /cache compute cache l2 encode /l2 l2 put l2 /l2 /cache");
}

TEST_CASE("cache walk: L3 alone stores no result unless the caller wants it, uncacheable outputs store nothing") {
  WalkRecorder r;
  r.on = {CacheLevel::l3};
  CHECK(walk_hierarchy(r) == CacheOutcome::miss);
  CHECK(joined(r.log) == "cache l3 get l3 /l3 /cache prepare cache l3 put l3 /l3 /cache compute");
  CHECK(r.served == 0);

  WalkRecorder w;
  w.on = {CacheLevel::l3};
  w.want = true;
  walk_hierarchy(w);
  CHECK(w.served == 1);

  WalkRecorder u;
  u.on = {CacheLevel::l1};
  u.uncacheable = true;
  CHECK(walk_hierarchy(u) == CacheOutcome::miss);
  CHECK(joined(u.log) == "cache l1 get l1 /l1 /cache prepare compute");
}
