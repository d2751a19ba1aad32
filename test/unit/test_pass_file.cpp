// The file a compare pass process hands its figures back in (pass_file.hpp):
// the round trip, and a short or corrupt file refused with its name.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "inferprof/error.hpp"
#include "replay/pass_file.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

detail::RequestSeries series(double base, std::size_t n) {
  detail::RequestSeries s;
  for (std::size_t i = 0; i < n; ++i) {
    s.latency_us.push_back(base + static_cast<double>(i));
    s.outcome.push_back(i % 2 ? CacheOutcome::l1_hit : CacheOutcome::miss);
    s.cpu_us.push_back(i % 3 ? std::numeric_limits<double>::quiet_NaN() : base / 2);
    for (std::size_t k = 0; k < kStageCount; ++k) {
      s.stage_us[k].push_back(static_cast<double>(k) + 0.25);
      s.stage_cpu_us[k].push_back(static_cast<double>(k) + 0.5);
    }
  }
  s.op_names = {"preprocess.resize", "preprocess.normalize"};
  s.op_us = {std::vector<double>(n, 3.0), std::vector<double>(n, 4.0)};
  s.op_cpu_us = {std::vector<double>(n, 1.5), std::vector<double>(n, 2.5)};
  return s;
}

detail::PassFigures figures() {
  detail::PassFigures p;
  p.requests = 5;
  p.pid = 4242;
  p.input = {1, 2, 3, 2, 1};
  p.series = {series(100, 5), series(20, 5)};
  p.mean_us = {102, 22};
  p.wall_s = {0.0005, 0.0001};
  return p;
}

// Equal, NaN included (CPU time not read).
bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i])))) return false;
  return true;
}

}  // namespace

TEST_CASE("a pass file reads back what was written") {
  TempDir dir;
  const detail::PassFigures p = figures();
  detail::write_pass_file(dir.path().string(), "pass-2.bin", p);
  const detail::PassFigures q = detail::read_pass_file(dir.file("pass-2.bin"));
  CHECK(q.requests == 5);
  CHECK(q.pid == 4242);
  CHECK(q.input == p.input);
  CHECK(q.mean_us == p.mean_us);
  CHECK(q.wall_s == p.wall_s);
  REQUIRE(q.series.size() == 2);
  for (std::size_t c = 0; c < 2; ++c) {
    const detail::RequestSeries &a = p.series[c], &b = q.series[c];
    CHECK(same(a.latency_us, b.latency_us));
    CHECK(a.outcome == b.outcome);
    CHECK(same(a.cpu_us, b.cpu_us));
    for (std::size_t k = 0; k < kStageCount; ++k) {
      CHECK(same(a.stage_us[k], b.stage_us[k]));
      CHECK(same(a.stage_cpu_us[k], b.stage_cpu_us[k]));
    }
    CHECK(a.op_names == b.op_names);
    REQUIRE(b.op_us.size() == 2);
    REQUIRE(b.op_cpu_us.size() == 2);
    for (std::size_t k = 0; k < 2; ++k) {
      CHECK(same(a.op_us[k], b.op_us[k]));
      CHECK(same(a.op_cpu_us[k], b.op_cpu_us[k]));
    }
  }
}

TEST_CASE("a short, long or corrupt pass file is an error naming it, never a partial pass") {
  TempDir dir;
  const std::string bytes = detail::encode_pass(figures());
  const std::string path = dir.file("pass-3.bin");
  auto refused = [&](const std::string& content) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
    try {
      detail::read_pass_file(path);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::runtime);
      CHECK(std::string(e.what()).find(path) != std::string::npos);
      CHECK(std::string(e.what()).find('\n') == std::string::npos);
      return true;
    }
    return false;
  };
  // Cut anywhere: in the header, in a series, before the end mark.
  for (std::size_t keep : {std::size_t{0}, std::size_t{5}, std::size_t{20}, bytes.size() / 2, bytes.size() - 1})
    CHECK_MESSAGE(refused(bytes.substr(0, keep)), "cut to ", keep, " bytes");
  CHECK(refused(bytes + "x"));
  std::string other = bytes;
  other[0] = 'X';
  CHECK(refused(other));
  std::string version = bytes;
  version[8] = 9;
  CHECK(refused(version));
  // A count past the end of the file is refused before anything is allocated for it.
  std::string huge = bytes;
  const std::uint64_t big = std::uint64_t{1} << 60;
  std::memcpy(huge.data() + 8 + 4 + 8 + 8, &big, sizeof big);
  CHECK(refused(huge));
  std::filesystem::remove(path);
  CHECK_THROWS_AS(detail::read_pass_file(path), Error);
}
