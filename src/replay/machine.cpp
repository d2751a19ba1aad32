#include "replay/machine.hpp"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

namespace inferprof::detail {
namespace {

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", tm);
}

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

// The CPU's marketing name: with the core count, what `diff` compares to
// decide whether two runs ran on the same kind of machine.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon == std::string::npos) break;
    auto start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "unknown" : line.substr(start);
  }
  return "unknown";
}

}  // namespace

void record_machine_facts(RunInfo& info) {
  info.hostname = host_name();
  info.cpu_model = cpu_model();
  info.cpu_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  info.started_at = iso_now();
}

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace inferprof::detail
