#pragma once
// The one table of entry points between inferprof and its model pipeline,
// libinferprof_pipeline.so: the executable loads the plugin (and with it
// libtorch) only when a command first needs a model. No libtorch here: both
// sides include this header.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "inferprof/inspect.hpp"
#include "inferprof/pipeline.hpp"

namespace inferprof::plugin {

// Bumped whenever this table or a type passed through it changes shape; the
// loader refuses a plugin of another build.
inline constexpr std::uint32_t kAbi = 4;
inline constexpr const char* kFileName = "libinferprof_pipeline.so";
// The sizes of what crosses the boundary, as each side was compiled: a plugin
// built from other headers (a stale build) is refused rather than trusted.
inline constexpr std::uint64_t kLayout =
    (sizeof(Profile) << 48) ^ (sizeof(TraceRequest) << 40) ^ (sizeof(RequestRecord) << 32) ^ (sizeof(ModelInfo) << 24) ^
    (sizeof(ModelBytes) << 16) ^ (sizeof(GpuInfo) << 8) ^ (sizeof(PipelineOptions) << 4) ^ sizeof(CacheSet) ^
    (sizeof(ModelMetadata) << 12) ^ (sizeof(GenModelOptions) << 20) ^ (sizeof(Inspection) << 28) ^
    (sizeof(InspectOptions) << 36);
inline constexpr const char* kEntryPoint = "inferprof_pipeline_api";

// Pipeline's work, done inside the plugin (see Pipeline in pipeline.hpp).
class Backend {
 public:
  virtual ~Backend() = default;
  virtual ModelHandle load(const ModelBytes& bytes, RequestRecord* record) const = 0;
  virtual void activate(ModelHandle model) = 0;
  virtual ModelHandle active() const = 0;
  virtual const ModelInfo& model() const noexcept = 0;
  virtual void serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
                     const ModelHandle& model) = 0;
  virtual double verify(const TraceRequest& request, const Blob& served, const ModelHandle& model) = 0;
  virtual Pipeline::ModelIo model_io(const TraceRequest& request, bool with_outputs, const ModelHandle& model) = 0;
  virtual GpuInfo finish_gpu() = 0;
  virtual void set_gpu_trace(bool on) = 0;
  virtual std::vector<std::int64_t> default_shape() const = 0;
  virtual DType default_dtype() const = 0;
};

struct Api {
  std::uint32_t abi;
  const char* version;   // INFERPROF_VERSION of the build that made the plugin
  std::uint64_t layout;  // kLayout as the plugin was compiled
  std::unique_ptr<Backend> (*open)(const ModelBytes& first, const Profile& profile, const PipelineOptions& options);
  const ModelInfo& (*model_info)(const LoadedModel& model);
  int (*configure_threads)(int requested);
  std::string (*libtorch_version)();
  ModelMetadata (*generate_model)(const GenModelOptions& options);
  Inspection (*inspect_model)(const ModelBytes& model, const Profile& profile, const InspectOptions& options);
};

// The plugin's table, loading the plugin on the first call (thread-safe).
// Throws Error(runtime) naming the file when it is missing or unusable.
const Api& api();
// Where the plugin is looked for, in order: next to the executable, then
// where `install` puts it.
std::vector<std::string> plugin_candidates();

}  // namespace inferprof::plugin

// The entry point the plugin exports (C linkage: found with dlsym).
extern "C" const inferprof::plugin::Api* inferprof_pipeline_api();
