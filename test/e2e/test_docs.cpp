// End-to-end: the trace examples in docs/trace-format.md and README.md are what the binary does.
// The error table's example lines give exactly the messages the page lists,
// and its example traces are valid, so a user can write a trace from it.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <regex>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

std::string trace_format_md() {
  const fs::path path = fs::path(INFERPROF_PROFILES_DIR).parent_path() / "docs" / "trace-format.md";
  REQUIRE_MESSAGE(fs::is_regular_file(path), path);
  return slurp(path);
}

// The text from `heading` to the next heading of the same or a higher level.
std::string section(const std::string& md, const std::string& heading) {
  const auto start = md.find("\n" + heading + "\n");
  REQUIRE_MESSAGE(start != std::string::npos, "no heading " << heading);
  const std::string level = heading.substr(0, heading.find(' ') + 1);
  std::size_t end = start + heading.size() + 2;
  for (;;) {
    end = md.find("\n#", end);
    if (end == std::string::npos) break;
    const auto hashes = md.find_first_not_of('#', end + 1) - (end + 1);
    if (hashes <= level.size() - 1) break;
    ++end;
  }
  return md.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The first ```json block of `text`.
std::string first_json_block(const std::string& text) {
  const auto open = text.find("```json\n");
  REQUIRE(open != std::string::npos);
  const auto body = open + 8;
  const auto close = text.find("```", body);
  REQUIRE(close != std::string::npos);
  return text.substr(body, close - body);
}

std::vector<std::string> code_spans(const std::string& cell) {
  static const std::regex span("`([^`]+)`");
  std::vector<std::string> out;
  for (std::sregex_iterator it(cell.begin(), cell.end(), span), end; it != end; ++it)
    out.push_back((*it)[1]);
  return out;
}

// A float32 .npy file of `shape` holding 0, 1, 2, ...
std::string npy_float32(const std::vector<int>& shape) {
  std::string dims;
  std::size_t count = 1;
  for (int d : shape) {
    dims += std::to_string(d) + ", ";
    count *= static_cast<std::size_t>(d);
  }
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (" + dims.substr(0, dims.size() - 2) +
                       (shape.size() == 1 ? "," : "") + "), }";
  header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY\x01";
  out += '\0';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  for (std::size_t i = 0; i < count; ++i) {
    const float v = static_cast<float>(i);
    char bytes[4];
    std::memcpy(bytes, &v, 4);  // little-endian hosts only, as the .npy descr says
    out.append(bytes, 4);
  }
  return out;
}

struct DocsModel {
  TempDir dir;
  std::string path = dir.file("mlp.pt");
  DocsModel() {
    auto m = run_cli({"gen-model", "--arch", "mlp", "-o", path});
    if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
  }
};
DocsModel& docs_model() {
  static DocsModel m;
  return m;
}

}  // namespace

TEST_SUITE("e2e docs") {
  TEST_CASE("every example line of the trace-format error table gives the listed message") {
    const std::string errors = section(trace_format_md(), "### Errors");
    TempDir dir;
    const std::string trace = dir.file("bad.jsonl");
    int checked = 0;
    std::istringstream lines(errors);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("| `", 0) != 0) continue;
      const auto split = line.find("` | ");
      REQUIRE_MESSAGE(split != std::string::npos, line);
      const std::string message = code_spans(line.substr(0, split + 1)).at(0);
      for (const std::string& example : code_spans(line.substr(split + 1))) {
        if (example[0] != '{' && example[0] != '[' && example[0] != '"') continue;  // prose, not a line
        std::ofstream(trace, std::ios::trunc) << example << '\n';
        auto r = run_cli({"run", docs_model().path, "--trace", trace, "--no-progress"});
        CAPTURE(example);
        CHECK(r.code == 2);
        CHECK(r.err == "inferprof: error: " + trace + ":1: " + message + "\n");
        ++checked;
      }
    }
    // The table lists over 20 lines; fewer means the page's layout changed under this test.
    CHECK(checked >= 20);
  }

  TEST_CASE("the complete example trace of the trace-format page replays with its .npy input") {
    const std::string example = section(trace_format_md(), "### A complete example");
    TempDir dir;
    const std::string trace = dir.write("traffic/requests.jsonl", first_json_block(example));
    dir.write("traffic/inputs/user-17.npy", npy_float32({1, 16}));
    // From another working directory: the .npy path is relative to the trace's folder.
    auto r =
        run_cli({"run", docs_model().path, "--trace", trace, "--open-loop", "--out", dir.file("r"), "--no-progress"});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string csv = slurp(dir.file("r/requests.csv"));
    CHECK(count_lines(csv) == 5);
    // Keys as the page says: given ones kept, request 4's derived from its input.
    CHECK(csv.find(",1,1,user-17,") != std::string::npos);
    CHECK(csv.find(",3,3,user-17,") != std::string::npos);
    CHECK(csv.find(",4,4,h:") != std::string::npos);
  }

  TEST_CASE("the README's trace lines are valid records") {
    const fs::path readme = fs::path(INFERPROF_PROFILES_DIR).parent_path() / "README.md";
    TempDir dir;
    const std::string trace = dir.write("t.jsonl", first_json_block(slurp(readme)));
    auto r = run_cli({"convert", trace, "-o", dir.file("t.iptrace")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find(": 3 requests, 1 model updates from ") != std::string::npos);
  }

  TEST_CASE("the first example lines of the trace-format page are valid records") {
    const std::string md = trace_format_md();
    TempDir dir;
    const std::string trace = dir.write("t.jsonl", first_json_block(section(md, "## JSON lines (requests.jsonl)")));
    // convert reads every line through the same validating reader as run.
    auto r = run_cli({"convert", trace, "-o", dir.file("t.iptrace")});
    REQUIRE_MESSAGE(r.code == 0, r.err);
    CHECK(r.out.find(": 9 requests, 1 model updates from ") != std::string::npos);
  }
}
