#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>

#include "base/atomic_file.hpp"
#include "base/json.hpp"
#include "inferprof/error.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {

namespace {

// std::mt19937_64's output sequence is fixed by the standard; the standard
// distributions are not, so all sampling below is done by hand.
double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1), 53 random bits
}

__extension__ typedef unsigned __int128 u128;  // __extension__: -Wpedantic knows no __int128

std::uint64_t uniform_index(std::mt19937_64& rng, std::uint64_t n) {
  // Multiply-shift: unbiased enough for a workload generator, and in range
  // for any n, which a double product is not near 2^53.
  return static_cast<std::uint64_t>((static_cast<u128>(rng()) * n) >> 64);
}

// Key popularity: rank r (0 = hottest) has weight 1 / (r + 1)^a. The table is
// the unnormalised CDF, searched with a uniform draw scaled by its total.
class KeySampler {
 public:
  KeySampler(std::uint64_t keys, double zipf) : keys_(keys) {
    if (zipf == 0) return;
    cdf_.resize(keys);
    double total = 0;
    for (std::uint64_t r = 0; r < keys; ++r) {
      total += zipf == 1.0 ? 1.0 / static_cast<double>(r + 1) : std::pow(static_cast<double>(r + 1), -zipf);
      cdf_[r] = total;
    }
  }

  std::uint64_t operator()(std::mt19937_64& rng) const {
    if (cdf_.empty()) return uniform_index(rng, keys_);
    const double target = uniform01(rng) * cdf_.back();
    const auto it = std::upper_bound(cdf_.begin(), cdf_.end(), target);
    // target < total, so `it` is in range but for rounding at the very top.
    return std::min<std::uint64_t>(static_cast<std::uint64_t>(it - cdf_.begin()), keys_ - 1);
  }

 private:
  std::uint64_t keys_;
  std::vector<double> cdf_;
};

void validate(const GenTraceOptions& o) {
  if (o.requests == 0) throw bad_input("trace generator: requests must be > 0");
  if (o.keys == 0) throw bad_input("trace generator: keys must be > 0");
  if (!(o.zipf >= 0) || !std::isfinite(o.zipf)) {
    throw bad_input(fmt::format("trace generator: zipf must be a finite number >= 0 (got {})", o.zipf));
  }
  if (!(o.rate >= 0) || !std::isfinite(o.rate)) {
    throw bad_input(fmt::format("trace generator: rate must be a finite number >= 0 (got {})", o.rate));
  }
  if (!(o.update_every_ms >= 0) || !std::isfinite(o.update_every_ms)) {
    throw bad_input(
        fmt::format("trace generator: update_every_ms must be a finite number >= 0 (got {})", o.update_every_ms));
  }
  if (o.update_every_ms > 0 && o.rate == 0) {
    throw bad_input("trace generator: model updates need timestamps, so update_every_ms > 0 needs rate > 0");
  }
  if (!o.images.empty() && !o.texts.empty())
    throw bad_input("trace generator: images and texts both give the inputs: choose one");
  if (o.shape.empty() || std::any_of(o.shape.begin(), o.shape.end(), [](std::int64_t d) { return d <= 0; })) {
    throw bad_input(
        fmt::format("trace generator: shape must be non-empty with positive extents (got {})", format_shape(o.shape)));
  }
}

// Named inputs as a request's "inputs" map, formatted once: each argument's
// spec up to its seed, then what follows the seed (the key's index goes between).
std::vector<std::pair<std::string, std::string>> named_input_parts(const std::vector<InputSpec>& specs) {
  std::vector<std::pair<std::string, std::string>> named;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const InputSpec& in = specs[i];
    fmt::memory_buffer before;
    before.append(std::string_view(i == 0 ? R"(,"inputs":{)" : ","));
    report::append_json_string(before, in.name);
    fmt::format_to(std::back_inserter(before), R"(:{{"shape":[{}],"dtype":"{}","seed":)", fmt::join(in.shape, ","),
                   dtype_name(in.dtype.value_or(DType::int64)));
    std::string after = in.range ? fmt::format(R"(,"range":[{},{}]}})", (*in.range)[0], (*in.range)[1]) : "}";
    if (i + 1 == specs.size()) after += "}";
    named.emplace_back(std::string(before.data(), before.size()), std::move(after));
  }
  return named;
}

}  // namespace

void generate_trace(const GenTraceOptions& options, const std::string& out_path) {
  validate(options);
  const GenTraceOptions& o = options;

  // The part of every request's input after the seed is the same; format it once.
  fmt::memory_buffer input_head;
  fmt::format_to(std::back_inserter(input_head), R"(,"input":{{"shape":[{}],"dtype":"{}","seed":)",
                 fmt::join(o.shape, ","), dtype_name(o.dtype));
  const std::string_view head(input_head.data(), input_head.size());
  const std::vector<std::pair<std::string, std::string>> named = named_input_parts(o.named_inputs);
  // Or each key's own input, with its key, formatted once: an image file or a line of text.
  const std::vector<std::string>& files = o.images.empty() ? o.texts : o.images;
  // Popularity ranks (inputs[0] is the most requested) follow a seeded shuffle of the files, not their
  // names: otherwise the first file by name was the hottest key of every trace. --keys N samples N of them
  // the same way. Its own generator: the arrivals and key draws below are as they were.
  std::vector<std::size_t> order(files.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 shuffle_rng(o.seed ^ 0x5eed5a1e5eed5a1eull);
  std::shuffle(order.begin(), order.end(), shuffle_rng);
  std::vector<std::string> inputs;
  for (std::size_t r = 0; r < order.size() && r < o.keys; ++r) {
    const std::size_t i = order[r];
    fmt::memory_buffer one;
    auto at = std::back_inserter(one);
    if (!o.images.empty()) {
      one.append(std::string_view(R"(,"key":)"));
      report::append_json_string(one, o.images[i]);
      one.append(std::string_view(R"(,"input":{"image":)"));
    } else {
      fmt::format_to(at, R"(,"key":"t-{}","input":{{"text":)", i);
    }
    report::append_json_string(one, files[i]);
    one.append(std::string_view("}}\n"));
    inputs.emplace_back(one.data(), one.size());
  }
  const std::uint64_t keys = inputs.empty() ? o.keys : inputs.size();
  fmt::memory_buffer model_json;
  report::append_json_string(model_json, o.model);
  const std::string_view model(model_json.data(), model_json.size());

  std::mt19937_64 rng(o.seed);
  const KeySampler sample_key(keys, o.zipf);
  const bool timed = o.rate > 0;
  const double mean_gap_ms = timed ? 1000.0 / o.rate : 0.0;
  double now_ms = 0;
  std::uint64_t updates = 0;  // model_update events written so far

  // Written beside the target and renamed over it: a reader never sees half a trace.
  report::TempFile file;
  file.open(out_path);
  constexpr std::size_t kFlushBytes = 1 << 20;
  fmt::memory_buffer out;
  out.reserve(kFlushBytes + 4096);
  auto it = std::back_inserter(out);

  for (std::uint64_t id = 1; id <= o.requests; ++id) {
    const std::uint64_t key = sample_key(rng);
    if (timed) {
      // Exponential gaps by inversion; 1 - u is in (0, 1], so log is finite.
      now_ms += -std::log(1.0 - uniform01(rng)) * mean_gap_ms;
      if (o.update_every_ms > 0) {
        // A request arriving exactly at an update sees the new version.
        while (static_cast<double>(updates + 1) * o.update_every_ms <= now_ms) {
          ++updates;
          fmt::format_to(it,
                         R"({{"event":"model_update","model":{},"version":"v{}","ts_ms":{:.3f}}})"
                         "\n",
                         model, updates + 1, static_cast<double>(updates) * o.update_every_ms);
        }
      }
      fmt::format_to(it, R"({{"id":{},"ts_ms":{:.3f})", id, now_ms);
    } else {
      fmt::format_to(it, R"({{"id":{})", id);
    }
    if (!inputs.empty()) {
      out.append(inputs[key]);
    } else if (!named.empty()) {
      fmt::format_to(it, R"(,"key":"k-{}")", key);
      for (const auto& [before, after] : named) {
        out.append(before);
        fmt::format_to(it, "{}", key);
        out.append(after);
      }
      out.append(std::string_view("}\n"));
    } else {
      // The seed is the key's index: equal keys always describe equal inputs.
      fmt::format_to(it, R"(,"key":"k-{}")", key);
      out.append(head);
      fmt::format_to(it, "{}}}}}\n", key);
    }
    if (out.size() >= kFlushBytes) {
      file.write(std::string_view(out.data(), out.size()));
      out.clear();
    }
  }
  file.write(std::string_view(out.data(), out.size()));
  file.rename_into_place();
}

std::size_t count_invalid_utf8(const std::vector<std::string>& texts) {
  return static_cast<std::size_t>(std::count_if(
      texts.begin(), texts.end(), [](const std::string& t) { return !simdjson::validate_utf8(t.data(), t.size()); }));
}

}  // namespace inferprof
