#pragma once
// The request trace (requests.jsonl): its record types, a streaming reader and
// the synthetic trace generator. See docs/trace-format.md for the schema.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof {

enum class DType : std::uint8_t { uint8, int8, int16, int32, int64, float16, float32, float64, boolean };
std::string_view dtype_name(DType d);                     // "uint8", "float32", ..., "bool"
std::optional<DType> parse_dtype(std::string_view name);  // accepts the names above
std::size_t dtype_size(DType d);                          // bytes per element

// "[1, 3, 224, 224]"
std::string format_shape(const std::vector<std::int64_t>& shape);

struct InputSpec {
  // image: an encoded JPEG/PNG file (path in `file`); image_base64: its bytes inline.
  // text: UTF-8 text inline (`text`); text_file: a file of it (path in `file`).
  enum class Kind : std::uint8_t { none, seed, file, data, image, image_base64, text, text_file };
  Kind kind = Kind::none;
  std::vector<std::int64_t> shape;  // empty: the profile's or the model's default
  std::optional<DType> dtype;       // unset: the profile's or the model's default
  std::uint64_t seed = 0;           // kind == seed: deterministic synthetic tensor
  std::string file;                 // kind == file / image: path, resolved against the trace's folder
  std::string base64;               // kind == image_base64: the encoded image, base64 (RFC 4648, padded)
  std::vector<double> data;         // kind == data: inline numbers, row-major
  std::string text;                 // kind == text: the text itself
  // kind == seed: draw from [range[0], range[1]) (uniformly; integers for an integer dtype).
  std::optional<std::array<std::int64_t, 2>> range;
  std::string name;  // in a `inputs` map: the forward argument it feeds
};

struct TraceRequest {
  std::uint64_t id = 0;         // "id", default: the line number
  std::optional<double> ts_ms;  // arrival time since trace start
  std::string key;              // "key", or a hash of the input spec ("h:" + 16 hex digits)
  bool key_given = false;
  std::string model;       // optional "name@version" or "name"
  std::uint64_t line = 0;  // the trace line it came from (0: not from a trace), for errors
  InputSpec input;         // the one input (kind none when `inputs` is given)
  // "inputs": several, in the forward's order (a list) or by its argument
  // names (a map: each spec's `name` set, inputs_named true).
  std::vector<InputSpec> inputs;
  bool inputs_named = false;
};

struct TraceEvent {
  std::string type;  // "model_update"
  std::string model;
  std::string version;
  std::optional<double> ts_ms;
};

// One non-blank line of the trace.
struct TraceRecord {
  enum class Kind : std::uint8_t { request, event };
  Kind kind = Kind::request;
  std::uint64_t line = 0;  // 1-based line number in the file
  TraceRequest request;    // valid when kind == request
  TraceEvent event;        // valid when kind == event
};

// Column names of a CSV trace (header row required): docs/trace-format.md#csv-traces.
// simulate reads keys, timestamps and sizes; run and compare also an input per
// row (an image path or a seed); a row without one gets a synthetic input
// seeded by its key's hash.
struct CsvColumns {
  std::string ts = "timestamp";  // empty: no timestamps
  std::string key = "key";
  std::string size = "size";  // optional column: absent from the header means no sizes
  std::string image;          // an image file per row, relative to the trace (input.image)
  std::string seed;           // a synthetic input's seed per row (input.seed)
  // Set by parse_csv_columns for a ts or size column the user named: only the
  // defaults may be missing from the header.
  bool ts_named = false, size_named = false;
};
// "ts=time,key=obj_id,size=bytes,image=path,seed=n" (any subset). Throws Error(bad_input).
CsvColumns parse_csv_columns(std::string_view text);

// The longest line a JSONL trace may hold: 64 MiB (an image_base64 input of 48 MB).
inline constexpr std::size_t kMaxTraceLineBytes = std::size_t{64} << 20;

// Streams a JSONL trace with simdjson, one line at a time through a fixed-size
// buffer, so traces larger than memory replay in bounded memory. Every line is
// validated against docs/trace-format.md's schema; a bad line throws Error(bad_input)
// "FILE:LINE: what was expected", or with skip_invalid is counted and skipped.
// A file named *.csv is read as a CSV trace instead, through Options::csv.
class TraceReader {
 public:
  struct Options {
    bool skip_invalid = false;
    std::size_t buffer_bytes = 1 << 20;  // grows for a longer line, up to max_line_bytes
    CsvColumns csv;                      // a .csv trace's columns
    // A longer line is refused (FILE:LINE, even with skip_invalid) when the buffer reaches it, not read whole.
    std::size_t max_line_bytes = kMaxTraceLineBytes;
  };
  // Whether `path` is read as CSV (its name ends in .csv, any case).
  static bool is_csv(const std::string& path);
  // Throws Error(bad_input) when `path` is a FIFO or a device: opening one
  // waits for a writer, and a trace is read several times (hashed, scanned
  // for the warm-up, replayed). The constructor checks it; callers that peek
  // at a trace before constructing a reader call it first.
  static void check_regular(const std::string& path);
  // Throws Error(bad_input) if the file cannot be opened.
  explicit TraceReader(std::string path);
  TraceReader(std::string path, Options options);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;
  TraceReader(TraceReader&&) noexcept;  // a moved-from reader may only be destroyed or assigned to
  TraceReader& operator=(TraceReader&&) noexcept;

  // Fills `out` (reusing its allocations) with the next record; false at end of file.
  bool next(TraceRecord& out);

  const std::string& path() const noexcept;
  std::uint64_t lines() const noexcept;    // lines consumed so far, blank ones included
  std::uint64_t bytes() const noexcept;    // bytes consumed so far
  std::uint64_t skipped() const noexcept;  // invalid lines skipped (skip_invalid)
  // The first few skipped lines' messages, for the report.
  const std::vector<std::string>& skipped_examples() const noexcept;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Which of `count` replicas serves a request: by a hash of its key (each key
// on one replica, as a consistent-hash load balancer does), or round-robin
// by `nth`, its 0-based position among the trace's requests. The one rule the
// replay's shards and merge's accounting of them share.
int shard_of(bool by_key, std::string_view key, std::uint64_t nth, int count);

// The key docs/trace-format.md assigns when a request has none: a hash of the input spec.
std::string input_spec_key(const InputSpec& spec);
// The same for a request with several inputs (their names, when named, take part).
std::string input_specs_key(const std::vector<InputSpec>& specs, bool named);

struct GenTraceOptions {
  std::uint64_t requests = 1000;
  std::uint64_t keys = 100;  // distinct inputs
  double zipf = 1.0;         // popularity skew; 0 = uniform
  double rate = 100.0;       // Poisson arrivals per second; 0 = no ts_ms (closed loop only)
  std::vector<std::int64_t> shape = {1, 16};
  DType dtype = DType::float32;
  std::uint64_t seed = 1;
  double update_every_ms = 0;   // > 0: a model_update event every so many ms
  std::string model = "model";  // name used by model_update events
  // Instead of seeded tensors, one input per key (keys = how many; a seeded
  // sample of `keys` when fewer are wanted), popularity ranked by a seeded
  // shuffle, not by name: image files as the trace names them (input.image,
  // relative to its folder), or lines of text (input.text).
  std::vector<std::string> images;
  std::vector<std::string> texts;
  // Or several seeded inputs by the forward's argument names ("inputs": a map),
  // each with its shape, dtype and range; the key's index is every one's seed.
  std::vector<InputSpec> named_inputs;
};

// Writes a reproducible trace (same options, same bytes) to `out_path`
// atomically. Equal keys always carry equal input specs.
void generate_trace(const GenTraceOptions& options, const std::string& out_path);

// How many of `texts` are not valid UTF-8 (simdjson's validator): the trace's
// JSON writer puts U+FFFD in place of their bad bytes, so the model would be
// given other text than the file holds.
std::size_t count_invalid_utf8(const std::vector<std::string>& texts);

}  // namespace inferprof
