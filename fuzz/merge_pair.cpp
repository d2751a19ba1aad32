// A replica's run folder as merge reads it: the input is split at its first
// NUL byte into summary.json (before) and requests.csv (after), written into
// one folder, and merged (merge_runs, nothing written), then read by diff
// (load_run) as well: both check the rows against the summary. The trace
// that shares are counted from is a fixed one, not the path the summary names.
#include <algorithm>

#include "fuzz_support.hpp"
#include "inferprof/diff.hpp"
#include "inferprof/merge.hpp"

namespace {
constexpr std::string_view kTrace = R"({"id": 1, "key": "k1", "input": {"shape": [1, 4], "seed": 1}}
{"id": 2, "key": "k2", "input": {"shape": [1, 4], "seed": 2}}
{"id": 3, "key": "k1", "input": {"shape": [1, 4], "seed": 1}}
{"id": 4, "key": "k3", "input": {"shape": [1, 4], "seed": 3}}
)";
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  static const std::string trace =
      fuzz::write_input("merge-trace.jsonl", reinterpret_cast<const std::uint8_t*>(kTrace.data()), kTrace.size());
  static const std::string folder = [] {
    const std::filesystem::path dir = fuzz::scratch_dir() / "merge-run";
    std::filesystem::create_directories(dir);
    return dir.string();
  }();
  const std::uint8_t* split = std::find(data, data + size, std::uint8_t{0});
  const std::size_t summary_size = static_cast<std::size_t>(split - data);
  fuzz::write_input("merge-run/summary.json", data, summary_size);
  if (split == data + size)
    fuzz::remove_input("merge-run/requests.csv");
  else
    fuzz::write_input("merge-run/requests.csv", split + 1, size - summary_size - 1);
  MergeOptions options;
  options.dirs = {folder};
  options.trace_path = trace;
  bool ok = fuzz::expect_error_or_success([&] { (void)merge_runs(options); });
  ok |= fuzz::expect_error_or_success([&] { (void)load_run(folder); });
  return fuzz::verdict(ok);
}
