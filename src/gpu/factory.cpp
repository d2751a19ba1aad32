// The one place that picks the GPU implementation: CMake compiles src/gpu/cuda/
// and defines INFERPROF_HAS_CUDA=1 only when CUDA, CUPTI and NVTX were found.
#include <fmt/format.h>

#include "inferprof/error.hpp"
#include "inferprof/gpu.hpp"

#if INFERPROF_HAS_CUDA
#include "gpu/cuda/cuda_tracer.hpp"
#endif

namespace inferprof::gpu {

#if INFERPROF_HAS_CUDA

const bool kSupported = true;

std::unique_ptr<Tracer> make_tracer(const TracerOptions& options) {
  return cuda::make_tracer(options);
}
std::string device_name(int device_index) {
  return cuda::device_name(device_index);
}
CopyPeak measure_copy_peak(int device_index, std::uint64_t bytes) {
  return cuda::measure_copy_peak(device_index, bytes);
}

#else

const bool kSupported = false;

namespace {
class NullTracer final : public Tracer {
 public:
  void begin_request(RequestRecord&) override {}
  void end_request(RequestRecord&) override {}
  void cancel_request() noexcept override {}
  void begin_stage(Stage) override {}
  void end_stage(Stage) override {}
  TracerStats finish() override { return {}; }
};
}  // namespace

std::unique_ptr<Tracer> make_tracer(const TracerOptions&) {
  return std::make_unique<NullTracer>();
}
std::string device_name(int) {
  throw bad_input(fmt::format("this build has no CUDA support; {}", kRebuildHint));
}
CopyPeak measure_copy_peak(int, std::uint64_t) {
  return {};
}

#endif

}  // namespace inferprof::gpu
