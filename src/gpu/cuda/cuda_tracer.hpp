#pragma once
// Private to the gpu module, compiled only with INFERPROF_WITH_CUDA: the
// CUPTI + NVTX tracer and the CUDA runtime helpers behind gpu.hpp.
#include <memory>
#include <string>

#include "inferprof/gpu.hpp"

namespace inferprof::gpu::cuda {

std::unique_ptr<Tracer> make_tracer(const TracerOptions& options);
std::string device_name(int device_index);
CopyPeak measure_copy_peak(int device_index, std::uint64_t bytes);

}  // namespace inferprof::gpu::cuda
