// The modes a person spells (enum_names.hpp): one table per enum, which the
// parser, the printer and the error's list of valid values all read.
#include <doctest/doctest.h>

#include "inferprof/compare.hpp"
#include "inferprof/enum_names.hpp"
#include "inferprof/profile.hpp"
#include "inferprof/run_config.hpp"

using namespace inferprof;

namespace {
// Every value prints as a name that parses back to it, and the names are distinct.
template <class E>
void check_round_trip() {
  const auto names = enum_names<E>();
  for (std::size_t i = 0; i < names.size(); ++i) {
    const E e = static_cast<E>(i);
    CHECK(enum_name(e) == names[i]);
    CHECK(parse_enum<E>(enum_name(e)) == e);
    for (std::size_t j = 0; j < i; ++j)
      CHECK(names[i] != names[j]);
  }
  CHECK_FALSE(parse_enum<E>("").has_value());
  CHECK_FALSE(parse_enum<E>(names[0] + "x").has_value());
}
}  // namespace

TEST_SUITE("run config") {
  TEST_CASE("each mode's names round-trip, spelt as the command line and the reports spell them") {
    check_round_trip<UpdateMode>();
    check_round_trip<Drive>();
    check_round_trip<Split>();
    check_round_trip<CompareMode>();
    CHECK(enum_names<UpdateMode>() == std::vector<std::string>{"sync", "async", "preload"});
    CHECK(enum_name(Split::round_robin) == "rr");
    CHECK(enum_name(Split::hash) == "hash");
    CHECK(enum_name(Drive::open_loop) == "open-loop");  // summary.json's info.mode
    CHECK(parse_enum<Split>("HASH") == std::nullopt);   // exact spelling only
  }

  TEST_CASE("the choices an error lists: every name, joined as a person would") {
    CHECK(enum_choices<UpdateMode>() == "sync, async or preload");
    CHECK(enum_choices<Split>() == "rr or hash");
    CHECK(enum_choices<UpdateMode>("\"") == "\"sync\", \"async\" or \"preload\"");
  }

  TEST_CASE("defaults: a closed-loop replay, not a replica, the profile's update mode") {
    RunConfig c;
    CHECK(c.replay.drive == Drive::closed_loop);
    CHECK_FALSE(c.replica.is_replica());
    CHECK(c.replica.split == Split::round_robin);
    CHECK_FALSE(c.store.update_mode.has_value());
    CHECK(c.gpu.trace);
  }
}
