#pragma once
// Resizing 8-bit pixels the way Pillow's Image.resize does, so that a profile
// modelling a PIL/torchvision image service spends the time that service
// spends and gives the model the tensor that service gives it (byte for byte).
// No libtorch here.
#include <cstdint>

namespace inferprof::image {

// Pillow's resampling filters (Image.Resampling), with their support radii:
// box 0.5, bilinear 1, hamming 1, bicubic 2 (a = -0.5), lanczos 3.
enum class Filter : std::uint8_t { nearest, box, bilinear, hamming, bicubic, lanczos };

// Interleaved pixels (row-major, `channels` bytes per pixel, rows packed) of
// width x height into out_width x out_height at `dst`. As Pillow resamples
// 8-bit images: separable, the horizontal pass first over the rows the
// vertical pass reads, each pass rounding to 8 bits; when shrinking the
// filter is stretched by the scale (antialiased); weights are fixed-point with
// 22 fractional bits, each output's weights normalised to sum to one. Nearest
// takes the source pixel under each output pixel's centre, as Pillow's
// NEAREST does. Sizes must be > 0 and channels 1 to 4.
void resample(const std::uint8_t* src, std::uint32_t width, std::uint32_t height, std::uint32_t channels,
              std::uint8_t* dst, std::uint32_t out_width, std::uint32_t out_height, Filter filter);

}  // namespace inferprof::image
