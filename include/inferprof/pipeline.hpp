#pragma once
// The request pipeline: a loaded TorchScript model plus the profile's
// preprocessing, run one request at a time with every stage timed. libtorch
// stays behind this header (pimpl) so the rest of inferprof compiles fast.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/profile.hpp"
#include "inferprof/timing.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {

// What gen-model records inside the archive (extra file "inferprof.json").
struct ModelMetadata {
  std::string arch = "unknown";
  std::vector<std::int64_t> input_shape;
  std::optional<DType> input_dtype;
  std::int64_t parameters = 0;
  std::uint64_t seed = 0;
};

struct ModelInfo {
  std::string path;     // the file, or "name@version" when it came from the model store
  std::string name;     // the store's model name; the file path for a plain file
  std::string version;  // the result caches' key prefix: the store's version, or "xxh3:<16 hex>" of a file
  std::string hash;     // "xxh3:<16 hex>" of the bytes, wherever they came from
  ModelMetadata meta;
  std::int64_t file_bytes = 0;
  std::int64_t parameters = 0;     // counted from the loaded module
  double load_ms = 0;              // read + deserialise + move to device
  std::string served_by = "file";  // where the bytes came from: file, memory, redis, remote
};

// A serialised model and where it came from: a plain file, or the model store
// (which has already fetched and verified it, and says how long that took).
struct ModelBytes {
  std::string name;
  std::string version;
  std::shared_ptr<const std::string> bytes;
  std::string served_by = "file";
  Nanos fetch_ns = 0;   // becomes load/fetch
  Nanos verify_ns = 0;  // becomes load/verify
};
// Reads a model file: version "xxh3:<16 hex>" of its bytes. Throws
// Error(bad_input) when it is missing or a folder.
ModelBytes read_model_file(const std::string& path);

// One deserialised model version. Requests hold a reference while they use
// it, so a swap never pulls a model out from under a running forward pass.
struct LoadedModel;
using ModelHandle = std::shared_ptr<LoadedModel>;
const ModelInfo& model_info(const LoadedModel& model);

// The cache tiers a request goes through (any may be null: tier off).
// Lookups go L1 -> L2 -> L3 -> compute; a hit in a lower tier fills the ones above.
struct CacheSet {
  CacheTier* l1 = nullptr;
  CacheTier* l2 = nullptr;
  CacheTier* l3 = nullptr;
  bool any() const noexcept { return l1 || l2 || l3; }
};

struct PipelineOptions {
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N"
  bool record_ops = false;     // aten operators as children of `compute`
  bool pinned = false;         // cuda: stage inputs in page-locked memory before h2d
  bool gpu_trace = true;       // cuda: CUPTI + NVTX (off: host times only, to measure their cost)
  std::string trace_path;      // names the trace line in errors about a request's input (empty: "request ID")
  // Dynamic batching (--max-batch, --batch-delay-us; pipeline/batcher.hpp):
  // requests that need the model run in batches of up to max_batch, stacked
  // along dim 0; 1: every request runs alone.
  int max_batch = 1;
  Nanos batch_delay_ns = 0;
};

class Pipeline {
 public:
  // Loads the model. Throws Error(bad_input) if the file is missing,
  // Error(runtime) if it is not a loadable TorchScript archive.
  Pipeline(const std::string& model_path, const Profile& profile, const PipelineOptions& options);
  // Loads `first` (already fetched, e.g. from the model store).
  Pipeline(const ModelBytes& first, const Profile& profile, const PipelineOptions& options);

  // Deserialises a model version and moves it to the device. With `record`,
  // the time goes to a `load` span with children fetch (the store's time, as
  // measured by it), verify, deserialize and to_device. Thread-safe; does not
  // change what serve() uses (see activate()). Throws Error(runtime) if the
  // bytes are not a loadable TorchScript archive.
  ModelHandle load(const ModelBytes& bytes, RequestRecord* record = nullptr) const;
  // From now on serve() uses `model` (an atomic swap; requests already
  // running finish on the version they started with).
  void activate(ModelHandle model);
  ModelHandle active() const;
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // The model version loaded first (the one run reports describe).
  const ModelInfo& model() const noexcept;

  // input -> preprocess -> compute for one request, on the calling thread,
  // recording each stage (and its children) in `record`. Safe to call from
  // several threads at once. Throws Error naming the request on failure:
  // bad_input for an unreadable input file, runtime when the model rejects it.
  // With caches, record.cache_outcome says what served it: "l1_hit",
  // "l2_hit", "l3_hit" (computed from a cached preprocessed input) or "miss".
  // `served`, if given, receives the output as an encoded tensor blob.
  // `model`: the version to serve with (default: the active one).
  // With max_batch > 1 the model runs for a batch of concurrent serve()
  // calls (each waits on its own thread for its batch): record.batch says
  // how many, the batch_wait stage how long it waited.
  void serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches = nullptr,
             Blob* served = nullptr, const ModelHandle& model = nullptr);

  // Recomputes the request without any cache and compares the output with
  // `served`. Returns the max absolute difference (0 when identical);
  // infinity when shapes or dtypes differ or `served` does not decode.
  double verify(const TraceRequest& request, const Blob& served, const ModelHandle& model = nullptr);

  // What the model is given and gives back for `request`, computed without any
  // cache (--dump-inputs, --dump-outputs): the inputs as a tensor set of kind
  // dict named by the forward's arguments ("input0", ... when it has no
  // schema), the output as the cache stores it (null when its type or a dtype
  // has no such encoding). Throws as serve() does.
  struct ModelIo {
    Blob inputs, outputs;
  };
  ModelIo model_io(const TraceRequest& request, bool with_outputs, const ModelHandle& model = nullptr);

  // cuda: device name, copy peak and CUPTI's counts so far (flushes CUPTI
  // first). On CPU: enabled = false.
  GpuInfo finish_gpu();
  // cuda: turns CUPTI + NVTX on or off between requests (bench_gpu_overhead).
  void set_gpu_trace(bool on);

  // The shape/dtype a seed input gets when the request leaves them out.
  std::vector<std::int64_t> default_shape() const;
  DType default_dtype() const;

 private:
  void serve_traced(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
                    const ModelHandle& model);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Sets libtorch's intra-op thread count (0: one per core) and returns the
// count in effect, as read back from libtorch.
int configure_threads(int requested);
std::string libtorch_version();
// "xxh3:<16 hex>" of a file's bytes, read in blocks: a trace's identity in summary.json.
std::string file_version(const std::string& path);

struct GenModelOptions {
  std::string arch = "mlp";  // mlp | cnn | resnet18 | text
  std::uint64_t seed = 0;
  std::string out_path;
};
// Builds the architecture in C++ as TorchScript (random weights from `seed`)
// and saves it atomically with its metadata. Returns the metadata written.
ModelMetadata generate_model(const GenModelOptions& options);
const std::vector<std::string>& model_archs();

}  // namespace inferprof
