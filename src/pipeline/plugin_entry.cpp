// The plugin's side of plugin_api.hpp: the table the executable finds with
// dlsym, each entry the real (libtorch) implementation in this library.
#include "plugin/plugin_api.hpp"

namespace inferprof {
namespace {

class TorchBackend final : public plugin::Backend {
 public:
  TorchBackend(const ModelBytes& first, const Profile& profile, const PipelineOptions& options)
      : pipeline_(first, profile, options) {}
  ModelHandle load(const ModelBytes& bytes, RequestRecord* record) const override {
    return pipeline_.load(bytes, record);
  }
  void activate(ModelHandle model) override { pipeline_.activate(std::move(model)); }
  ModelHandle active() const override { return pipeline_.active(); }
  const ModelInfo& model() const noexcept override { return pipeline_.model(); }
  void serve(const TraceRequest& request, RequestRecord& record, const CacheSet* caches, Blob* served,
             const ModelHandle& model) override {
    pipeline_.serve(request, record, caches, served, model);
  }
  double verify(const TraceRequest& request, const Blob& served, const ModelHandle& model) override {
    return pipeline_.verify(request, served, model);
  }
  Pipeline::ModelIo model_io(const TraceRequest& request, bool with_outputs, const ModelHandle& model) override {
    return pipeline_.model_io(request, with_outputs, model);
  }
  GpuInfo finish_gpu() override { return pipeline_.finish_gpu(); }
  void set_gpu_trace(bool on) override { pipeline_.set_gpu_trace(on); }
  std::vector<std::int64_t> default_shape() const override { return pipeline_.default_shape(); }
  DType default_dtype() const override { return pipeline_.default_dtype(); }

 private:
  Pipeline pipeline_;  // this library's Pipeline (pipeline.cpp), not the executable's facade
};

std::unique_ptr<plugin::Backend> open_backend(const ModelBytes& first, const Profile& profile,
                                              const PipelineOptions& options) {
  return std::make_unique<TorchBackend>(first, profile, options);
}

}  // namespace
}  // namespace inferprof

extern "C" __attribute__((visibility("default"))) const inferprof::plugin::Api* inferprof_pipeline_api() {
  using namespace inferprof;
  static const plugin::Api api{plugin::kAbi,       INFERPROF_VERSION, plugin::kLayout, &open_backend, &model_info,
                               &configure_threads, &libtorch_version, &generate_model, &inspect_model};
  return &api;
}
