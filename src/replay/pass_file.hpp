#pragma once
// The figures of one lockstep pass that ran in a process of its own (compare
// --pass-process fresh): what the parent's statistics need of it, written by
// the child to a file in the parent's private folder and read back there.
//
// Format (little-endian, the machine's own: parent and child are one binary):
//   "IPPASS\0\0" u32 version (1)
//   u64 requests, i64 pid, u64 n, n x u64 input hash
//   u32 targets, then per target: f64 mean_us, f64 wall_s and its RequestSeries
//     (each vector a u64 count then its items: latency_us, outcome (u8),
//      cpu_us, stage_us x kStageCount, stage_cpu_us x kStageCount, op_names
//      (u64 count, each a u64 length and its bytes), op_us and op_cpu_us per op)
//   "IPEND\0\0\0"
// A file that ends early, holds more, or has another magic or version is an
// Error(runtime) naming it: never a partial pass.
#include <cstdint>
#include <string>
#include <vector>

#include "replay/engine.hpp"

namespace inferprof::detail {

struct PassFigures {
  std::uint64_t requests = 0;           // served under every configuration
  std::int64_t pid = 0;                 // the process that ran the pass
  std::vector<std::uint64_t> input;     // per request: a hash of its input key
  std::vector<RequestSeries> series;    // per configuration, its requests (the same order for all)
  std::vector<double> mean_us, wall_s;  // per configuration: its summary's mean latency and replay time
};

inline constexpr std::uint32_t kPassFileVersion = 1;

// The file's bytes (write_pass_file writes them atomically).
std::string encode_pass(const PassFigures& pass);
// Throws Error(runtime) "`named`: ..." on a short, long or corrupt encoding.
PassFigures decode_pass(const std::string& bytes, const std::string& named);

void write_pass_file(const std::string& dir, const std::string& name, const PassFigures& pass);
// Throws Error(runtime) naming the file when it is missing, short or corrupt.
PassFigures read_pass_file(const std::string& path);

}  // namespace inferprof::detail
