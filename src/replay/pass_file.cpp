#include "replay/pass_file.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>

#include "base/atomic_file.hpp"
#include "base/read_file.hpp"
#include "inferprof/error.hpp"

namespace inferprof::detail {
namespace {

constexpr char kMagic[8] = {'I', 'P', 'P', 'A', 'S', 'S', 0, 0};
constexpr char kEnd[8] = {'I', 'P', 'E', 'N', 'D', 0, 0, 0};
// A pass of a 100-pass compare over a large trace stays far below it.
constexpr std::uint64_t kMaxPassFileBytes = std::uint64_t{16} << 30;

class Writer {
 public:
  template <class T>
  void put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void bytes(const char* p, std::size_t n) { out_.append(p, n); }
  template <class T>
  void vec(const std::vector<T>& v) {
    put<std::uint64_t>(v.size());
    if (!v.empty()) bytes(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void text(const std::string& s) {
    put<std::uint64_t>(s.size());
    bytes(s.data(), s.size());
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& named) : in_(bytes), named_(named) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw runtime_failure(
        fmt::format("{}: not a complete pass file ({} at byte {} of {})", named_, what, at_, in_.size()));
  }
  void take(void* to, std::size_t n, const char* what) {
    if (in_.size() - at_ < n) fail(fmt::format("ends inside {}", what));
    std::memcpy(to, in_.data() + at_, n);
    at_ += n;
  }
  template <class T>
  T get(const char* what) {
    T v{};
    take(&v, sizeof v, what);
    return v;
  }
  // A count of items of `size` bytes each, no more than the bytes left can hold.
  std::uint64_t count(std::size_t size, const char* what) {
    const auto n = get<std::uint64_t>(what);
    if (size > 0 && n > (in_.size() - at_) / size) fail(fmt::format("ends inside {}", what));
    return n;
  }
  template <class T>
  void vec(std::vector<T>& v, const char* what) {
    v.resize(count(sizeof(T), what));
    if (!v.empty()) take(v.data(), v.size() * sizeof(T), what);
  }
  std::string text(const char* what) {
    std::string s(count(1, what), '\0');
    if (!s.empty()) take(s.data(), s.size(), what);
    return s;
  }
  bool at_end() const { return at_ == in_.size(); }

 private:
  const std::string& in_;
  const std::string& named_;
  std::size_t at_ = 0;
};

void put_series(Writer& w, const RequestSeries& s) {
  w.vec(s.latency_us);
  w.vec(s.outcome);
  w.vec(s.cpu_us);
  for (std::size_t k = 0; k < kStageCount; ++k) {
    w.vec(s.stage_us[k]);
    w.vec(s.stage_cpu_us[k]);
  }
  w.put<std::uint64_t>(s.op_names.size());
  for (std::size_t k = 0; k < s.op_names.size(); ++k) {
    w.text(s.op_names[k]);
    w.vec(k < s.op_us.size() ? s.op_us[k] : std::vector<double>{});
    w.vec(k < s.op_cpu_us.size() ? s.op_cpu_us[k] : std::vector<double>{});
  }
}

RequestSeries get_series(Reader& r) {
  RequestSeries s;
  r.vec(s.latency_us, "a latency series");
  r.vec(s.outcome, "an outcome series");
  for (const CacheOutcome o : s.outcome)
    if (static_cast<int>(o) > static_cast<int>(CacheOutcome::none)) r.fail("an unknown cache outcome");
  r.vec(s.cpu_us, "a CPU series");
  for (std::size_t k = 0; k < kStageCount; ++k) {
    r.vec(s.stage_us[k], "a stage series");
    r.vec(s.stage_cpu_us[k], "a stage's CPU series");
  }
  const std::uint64_t ops = r.count(3 * sizeof(std::uint64_t), "the op names");
  s.op_names.resize(ops);
  s.op_us.resize(ops);
  s.op_cpu_us.resize(ops);
  for (std::size_t k = 0; k < ops; ++k) {
    s.op_names[k] = r.text("an op name");
    r.vec(s.op_us[k], "an op series");
    r.vec(s.op_cpu_us[k], "an op's CPU series");
  }
  return s;
}

}  // namespace

std::string encode_pass(const PassFigures& pass) {
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.put(kPassFileVersion);
  w.put(pass.requests);
  w.put(pass.pid);
  w.vec(pass.input);
  w.put<std::uint32_t>(static_cast<std::uint32_t>(pass.series.size()));
  for (std::size_t c = 0; c < pass.series.size(); ++c) {
    w.put(c < pass.mean_us.size() ? pass.mean_us[c] : 0.0);
    w.put(c < pass.wall_s.size() ? pass.wall_s[c] : 0.0);
    put_series(w, pass.series[c]);
  }
  w.bytes(kEnd, sizeof kEnd);
  return std::move(w.out());
}

PassFigures decode_pass(const std::string& bytes, const std::string& named) {
  Reader r(bytes, named);
  char magic[sizeof kMagic];
  r.take(magic, sizeof magic, "the header");
  if (std::memcmp(magic, kMagic, sizeof magic) != 0) r.fail("another kind of file");
  if (const auto v = r.get<std::uint32_t>("the header"); v != kPassFileVersion)
    r.fail(fmt::format("version {}, this inferprof reads {}", v, kPassFileVersion));
  PassFigures pass;
  pass.requests = r.get<std::uint64_t>("the header");
  pass.pid = r.get<std::int64_t>("the header");
  r.vec(pass.input, "the input hashes");
  const auto targets = r.get<std::uint32_t>("the configurations");
  for (std::uint32_t c = 0; c < targets; ++c) {
    pass.mean_us.push_back(r.get<double>("a configuration's mean"));
    pass.wall_s.push_back(r.get<double>("a configuration's replay time"));
    pass.series.push_back(get_series(r));
    if (pass.series.back().latency_us.size() != pass.requests) r.fail("a series of another length than the pass");
  }
  if (pass.input.size() != pass.requests) r.fail("input hashes of another count than the pass");
  char end[sizeof kEnd];
  r.take(end, sizeof end, "the end mark");
  if (std::memcmp(end, kEnd, sizeof end) != 0 || !r.at_end()) r.fail("no end mark where it belongs");
  return pass;
}

void write_pass_file(const std::string& dir, const std::string& name, const PassFigures& pass) {
  write_file_atomic(dir, name, encode_pass(pass));
}

PassFigures read_pass_file(const std::string& path) {
  const std::optional<std::string> bytes = report::read_regular_file(path, kMaxPassFileBytes);
  if (!bytes) throw runtime_failure(fmt::format("{}: the pass file is missing", path));
  return decode_pass(*bytes, path);
}

}  // namespace inferprof::detail
