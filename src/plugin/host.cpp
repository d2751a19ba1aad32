// The executable's side of the pipeline: Pipeline and the model functions of
// pipeline.hpp, forwarding to libinferprof_pipeline.so, which is loaded (with
// libtorch) the first time a command needs it. Commands that run no model
// never load it. Reading a model file and hashing files need no libtorch and
// stay here.
#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>

#include "base/read_file.hpp"
#include "base/trusted_path.hpp"
#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "plugin/plugin_api.hpp"

namespace inferprof {

namespace fs = std::filesystem;

namespace plugin {
namespace {

// The folder of the running executable's real file. Never "." or a path from
// the environment: a library planted there would run its constructors.
std::string executable_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec || !exe.is_absolute())
    throw runtime_failure(fmt::format(
        "cannot find this executable's folder, where the model pipeline is installed (/proc/self/exe: {}): is /proc "
        "mounted?",
        ec ? ec.message() : "not an absolute path"));
  return exe.parent_path().string();
}

const Api* checked(const Api* table, const std::string& where) {
  if (table == nullptr || table->abi != kAbi || std::strcmp(table->version, INFERPROF_VERSION) != 0 ||
      table->layout != kLayout)
    throw runtime_failure(
        fmt::format("'{}' is not the model pipeline of this inferprof ({}): rebuild or reinstall "
                    "inferprof",
                    where, INFERPROF_VERSION));
  return table;
}

const Api* load() {
  using Entry = const Api* (*)();
  // A process linked with the plugin (the unit tests) has it already.
  if (auto entry = reinterpret_cast<Entry>(::dlsym(RTLD_DEFAULT, kEntryPoint)))
    return checked(entry(), "the linked pipeline library");
  const std::vector<std::string> candidates = plugin_candidates();
  for (const std::string& path : candidates) {
    std::error_code ec;
    if (!fs::exists(path, ec)) continue;
    if (const std::string why = untrusted_reason(path); !why.empty())
      throw runtime_failure(fmt::format("refusing to load the model pipeline '{}': {}", path, why));
    // RTLD_NOW: a symbol missing from this build fails here, naming it, not mid-run.
    void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = ::dlerror();
      throw runtime_failure(fmt::format("cannot load the model pipeline '{}': {}", path, why ? why : "unknown error"));
    }
    // Never dlclose: models, tensors and threads of libtorch live until exit.
    auto entry = reinterpret_cast<Entry>(::dlsym(handle, kEntryPoint));
    return checked(entry ? entry() : nullptr, path);
  }
  throw runtime_failure(
      fmt::format("the model pipeline '{}' is missing (nor is it in '{}'); it is built and installed "
                  "with inferprof, which needs it to run a model",
                  candidates.front(), fs::path(candidates.back()).parent_path().string()));
}

}  // namespace

std::vector<std::string> plugin_candidates() {
  const fs::path dir = executable_dir();
  return {(dir / kFileName).string(), (dir / INFERPROF_PLUGIN_RELATIVE_DIR / kFileName).lexically_normal().string()};
}

const Api& api() {
  static std::atomic<const Api*> table{nullptr};
  if (const Api* t = table.load(std::memory_order_acquire)) return *t;
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (table.load() == nullptr)
    table.store(load(), std::memory_order_release);  // a failure throws; the next call retries
  return *table.load();
}

}  // namespace plugin

struct Pipeline::Impl {
  std::unique_ptr<plugin::Backend> backend;
};

Pipeline::Pipeline(const std::string& model_path, const Profile& profile, const PipelineOptions& options)
    : Pipeline(read_model_file(model_path), profile, options) {}

Pipeline::Pipeline(const ModelBytes& first, const Profile& profile, const PipelineOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->backend = plugin::api().open(first, profile, options);
}

Pipeline::~Pipeline() = default;

ModelHandle Pipeline::load(const ModelBytes& bytes, RequestRecord* record) const {
  return impl_->backend->load(bytes, record);
}
void Pipeline::activate(ModelHandle model) {
  impl_->backend->activate(std::move(model));
}
ModelHandle Pipeline::active() const {
  return impl_->backend->active();
}
const ModelInfo& Pipeline::model() const noexcept {
  return impl_->backend->model();
}
void Pipeline::serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
                     const ModelHandle& model) {
  impl_->backend->serve(request, record, caches, served, model);
}
double Pipeline::verify(const TraceRequest& request, const Blob& served, const ModelHandle& model) {
  return impl_->backend->verify(request, served, model);
}
Pipeline::ModelIo Pipeline::model_io(const TraceRequest& request, bool with_outputs, const ModelHandle& model) {
  return impl_->backend->model_io(request, with_outputs, model);
}
GpuInfo Pipeline::finish_gpu() {
  return impl_->backend->finish_gpu();
}
void Pipeline::set_gpu_trace(bool on) {
  impl_->backend->set_gpu_trace(on);
}
std::vector<std::int64_t> Pipeline::default_shape() const {
  return impl_->backend->default_shape();
}
DType Pipeline::default_dtype() const {
  return impl_->backend->default_dtype();
}

// A handle exists only once the plugin is loaded.
const ModelInfo& model_info(const LoadedModel& model) {
  return plugin::api().model_info(model);
}
int configure_threads(int requested) {
  return plugin::api().configure_threads(requested);
}
std::string libtorch_version() {
  return plugin::api().libtorch_version();
}
ModelMetadata generate_model(const GenModelOptions& options) {
  return plugin::api().generate_model(options);
}
Inspection inspect_model(const ModelBytes& model, const Profile& profile, const InspectOptions& options) {
  return plugin::api().inspect_model(model, profile, options);
}

const std::vector<std::string>& model_archs() {
  static const std::vector<std::string> archs = {"mlp", "cnn", "resnet18", "text"};
  return archs;
}

ModelBytes read_model_file(const std::string& path) {
  const fs::file_status st = report::path_status(path, fmt::format("model '{}'", path));
  if (!fs::exists(st)) throw bad_input(fmt::format("model '{}' not found", path));
  if (fs::is_directory(st)) throw bad_input(fmt::format("model '{}' is a folder, not a TorchScript file", path));
  // A device or a FIFO (/dev/zero) has no size and would be read without end.
  if (!fs::is_regular_file(st)) throw bad_input(fmt::format("model '{}' is not a regular file", path));
  Nanos t0 = now_ns();
  std::optional<std::string> read = report::read_regular_file(path, std::numeric_limits<std::uint64_t>::max());
  if (!read) throw bad_input(fmt::format("model '{}' not found", path));
  if (read->empty()) throw bad_input(fmt::format("model '{}' is empty, not a TorchScript file", path));
  auto bytes = std::make_shared<std::string>(std::move(*read));
  ModelBytes m;
  m.name = path;
  // Identifies the model's bytes: a changed file changes every result key.
  m.version = fmt::format("xxh3:{:016x}", XXH3_64bits(bytes->data(), bytes->size()));
  m.bytes = std::move(bytes);
  m.served_by = "file";
  m.fetch_ns = now_ns() - t0;
  return m;
}

// A file's identity for reports (summary.json's trace_hash), read in 1 MB blocks.
std::string file_version(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    XXH3_64bits_update(state, buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  auto digest = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return fmt::format("xxh3:{:016x}", digest);
}

}  // namespace inferprof
