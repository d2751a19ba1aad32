// The simulator's trace readers: JSON lines (through TraceReader, so the
// same validation as `run`), the compact .iptrace records, and cache-trace
// CSVs. Each reduces a record to hashes, so nothing downstream keeps strings.
#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "base/text.hpp"
#include "inferprof/error.hpp"
#include "inferprof/simulate.hpp"
#include "inferprof/trace.hpp"
#include "report/streams.hpp"
#include "trace/csv_rows.hpp"

namespace inferprof {

namespace {

constexpr char kMagic[8] = {'I', 'P', 'T', 'R', 'A', 'C', 'E', '1'};
constexpr std::size_t kHeaderBytes = 32;
constexpr std::size_t kRecordBytes = 24;
constexpr std::uint32_t kFlagUpdate = 1, kFlagTs = 2;

std::uint64_t hash_string(std::string_view s) {
  return XXH3_64bits(s.data(), s.size());
}

void put_le(unsigned char* p, std::uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    p[i] = static_cast<unsigned char>((v >> (8 * i)) & 0xFF);
}
std::uint64_t get_le(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

class JsonlSource final : public SimSource {
 public:
  explicit JsonlSource(const std::string& path) : reader_(path) {}
  bool next(SimRecord& out) override {
    if (!reader_.next(rec_)) return false;
    out.line = rec_.line;
    out.size = 0;
    if (rec_.kind == TraceRecord::Kind::event) {
      out.kind = SimRecord::Kind::model_update;
      out.key = hash_string(rec_.event.version);
      out.ts_ms = rec_.event.ts_ms;
    } else {
      out.kind = SimRecord::Kind::request;
      out.key = hash_string(rec_.request.key);
      out.ts_ms = rec_.request.ts_ms;
    }
    return true;
  }
  std::string format() const override { return "jsonl"; }

 private:
  TraceReader reader_;
  TraceRecord rec_;
};

class IptraceSource final : public SimSource {
 public:
  explicit IptraceSource(const std::string& path) : path_(path), file_(std::fopen(path.c_str(), "rb")) {
    if (!file_) throw bad_input(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
    unsigned char h[kHeaderBytes];
    if (std::fread(h, 1, kHeaderBytes, file_.get()) != kHeaderBytes || std::memcmp(h, kMagic, 8) != 0)
      throw bad_input(fmt::format("{}: not an .iptrace file (expected the 32-byte header starting IPTRACE1)", path));
    const auto version = static_cast<std::uint32_t>(get_le(h + 8, 4));
    const auto rec = static_cast<std::uint32_t>(get_le(h + 12, 4));
    if (version != kIptraceVersion || rec != kRecordBytes)
      throw bad_input(
          fmt::format("{}: .iptrace version {} with {}-byte records: this build reads version {} with "
                      "{}-byte records",
                      path, version, rec, kIptraceVersion, kRecordBytes));
    // A forged header's counts could sum past 2^64 and wrap to what an empty file holds
    // (a count past the records the file has is the reader's "truncated" error, with its line).
    const std::uint64_t requests = get_le(h + 16, 8), events = get_le(h + 24, 8);
    if (events > std::numeric_limits<std::uint64_t>::max() - requests)
      throw bad_input(fmt::format("{}: the .iptrace header says {} requests and {} events: more than any file holds",
                                  path, requests, events));
    total_ = requests + events;
    buf_.resize(kRecordBytes * 65536);
  }
  bool next(SimRecord& out) override {
    if (pos_ == end_) {
      const std::size_t got = std::fread(buf_.data(), 1, buf_.size(), file_.get());
      if (got % kRecordBytes != 0 || (got == 0 && read_ < total_))
        throw bad_input(at_line(path_, read_ + got / kRecordBytes + 1,
                                fmt::format("truncated .iptrace: the header says {} records", total_)));
      if (got == 0) return false;
      pos_ = 0;
      end_ = got;
    }
    const unsigned char* p = buf_.data() + pos_;
    pos_ += kRecordBytes;
    ++read_;
    if (read_ > total_)
      throw bad_input(at_line(path_, read_, fmt::format("more records than the header's {}", total_)));
    const auto flags = static_cast<std::uint32_t>(get_le(p + 20, 4));
    if (flags & ~(kFlagUpdate | kFlagTs))
      throw bad_input(
          at_line(path_, read_, fmt::format("unknown record flags {:#x} (expected bits 0 and 1 only)", flags)));
    out.kind = (flags & kFlagUpdate) ? SimRecord::Kind::model_update : SimRecord::Kind::request;
    out.key = get_le(p, 8);
    if (flags & kFlagTs) {
      const auto ns = static_cast<std::int64_t>(get_le(p + 8, 8));
      if (ns < 0) throw bad_input(at_line(path_, read_, fmt::format("negative timestamp {} ns", ns)));
      out.ts_ms = static_cast<double>(ns) / 1e6;
    } else {
      out.ts_ms.reset();
    }
    out.size = get_le(p + 16, 4);
    out.line = read_;
    return true;
  }
  std::string format() const override { return "iptrace"; }

 private:
  std::string path_;
  // Owned from the start so a header check that throws in the constructor closes it.
  struct Closer {
    void operator()(std::FILE* f) const { std::fclose(f); }
  };
  std::unique_ptr<std::FILE, Closer> file_;
  std::vector<unsigned char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  std::uint64_t read_ = 0, total_ = 0;
};

class CsvSource final : public SimSource {
 public:
  CsvSource(const std::string& path, const CsvColumns& cols) : rows_(path, cols) {}
  bool next(SimRecord& out) override {
    CsvRows::Row row;
    if (!rows_.next(row)) return false;
    out.kind = SimRecord::Kind::request;
    out.line = row.line;
    out.key = hash_string(row.key);
    out.ts_ms = row.ts_ms;
    out.size = row.size;
    return true;
  }
  std::string format() const override { return "csv"; }

 private:
  CsvRows rows_;
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::unique_ptr<SimSource> open_sim_source(const std::string& path, const CsvColumns& csv) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw bad_input(fmt::format("trace '{}': cannot open: {}", path, std::strerror(errno)));
  char head[8] = {};
  const std::size_t got = std::fread(head, 1, 8, f);
  std::fclose(f);
  if (got == 8 && std::memcmp(head, kMagic, 8) == 0) return std::make_unique<IptraceSource>(path);
  if (ends_with(path, ".iptrace"))
    throw bad_input(fmt::format("{}: not an .iptrace file (expected the 32-byte header starting IPTRACE1)", path));
  if (TraceReader::is_csv(path)) return std::make_unique<CsvSource>(path, csv);
  return std::make_unique<JsonlSource>(path);
}

struct IptraceWriter::Impl {
  std::string path;
  report::TempFile file;
  std::string buf;
};

IptraceWriter::IptraceWriter(const std::string& path) : impl_(std::make_unique<Impl>()) {
  impl_->path = path;
  std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
  if (dir.empty()) dir = "/";
  impl_->file.open(dir, report::base_name(path));
  impl_->buf.assign(kHeaderBytes, '\0');  // the counts are known only at commit()
  impl_->buf.reserve(kRecordBytes * 65536);
}
IptraceWriter::~IptraceWriter() = default;

void IptraceWriter::add(const SimRecord& r, const std::string& source) {
  unsigned char rec[kRecordBytes] = {};
  std::uint32_t flags = 0;
  put_le(rec, r.key, 8);
  if (r.ts_ms) {
    flags |= kFlagTs;
    const double ns = std::round(*r.ts_ms * 1e6);
    if (!(std::fabs(ns) < 9.2e18))
      throw bad_input(at_line(source, r.line, fmt::format("ts_ms {} is out of range", *r.ts_ms)));
    put_le(rec + 8, static_cast<std::uint64_t>(static_cast<std::int64_t>(ns)), 8);
  }
  if (r.size > std::numeric_limits<std::uint32_t>::max())
    throw bad_input(at_line(source, r.line, fmt::format("size {} does not fit the 32-bit size field", r.size)));
  put_le(rec + 16, r.size, 4);
  if (r.kind == SimRecord::Kind::model_update) {
    flags |= kFlagUpdate;
    ++updates_;
  } else {
    ++requests_;
  }
  put_le(rec + 20, flags, 4);
  impl_->buf.append(reinterpret_cast<const char*>(rec), kRecordBytes);
  if (impl_->buf.size() >= kRecordBytes * 65536) {
    impl_->file.write(impl_->buf);
    impl_->buf.clear();
  }
}

void IptraceWriter::commit() {
  Impl& m = *impl_;
  m.file.write(m.buf);
  m.buf.clear();
  m.file.close();
  if (m.file.error() != 0) throw report::write_error(m.path, m.file.error());
  unsigned char header[kHeaderBytes] = {};
  std::memcpy(header, kMagic, 8);
  put_le(header + 8, kIptraceVersion, 4);
  put_le(header + 12, kRecordBytes, 4);
  put_le(header + 16, requests_, 8);
  put_le(header + 24, updates_, 8);
  std::FILE* f = std::fopen(m.file.temp_path().c_str(), "r+b");
  if (!f) throw report::write_error(m.path, errno);
  const bool wrote = std::fwrite(header, 1, kHeaderBytes, f) == kHeaderBytes;
  if (std::fclose(f) != 0 || !wrote) throw report::write_error(m.path, errno ? errno : EIO);
  m.file.rename_into_place();
}

ConvertStats convert_trace(const std::string& in_path, const std::string& out_path, const CsvColumns& csv) {
  auto source = open_sim_source(in_path, csv);
  IptraceWriter out(out_path);
  SimRecord r;
  while (source->next(r))
    out.add(r, in_path);
  out.commit();
  ConvertStats stats;
  stats.format = source->format();
  stats.requests = out.requests();
  stats.model_updates = out.model_updates();
  stats.bytes = kHeaderBytes + kRecordBytes * (stats.requests + stats.model_updates);
  return stats;
}

}  // namespace inferprof
