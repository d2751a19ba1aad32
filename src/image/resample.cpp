// Pillow's 8-bit resampling, written from its documented behaviour and
// checked byte for byte against Pillow (test/e2e, test/unit/test_resample.cpp).
// Exactness matters more than speed here: a profiler that resizes differently
// from the service feeds the model another tensor. It is also as fast as
// Pillow's C code (bench/resize_vs_pil.sh), which is what keeps the
// preprocess share honest.
#include "image/resample.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace inferprof::image {

namespace {

constexpr double kPi = 3.14159265358979323846;
// Pillow keeps 22 fractional bits: 8 for the pixel, 2 for overshoot of
// filters with negative lobes, within a 32-bit accumulator.
constexpr int kPrecisionBits = 22;

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= kPi;
  return std::sin(x) / x;
}

// Each filter as Pillow defines it, including which end of its support is
// open and (hamming) its single-precision constants, since weights that
// differ in the last bit can round a pixel the other way.
double weight(Filter f, double x) {
  switch (f) {
    case Filter::box:
      return x > -0.5 && x <= 0.5 ? 1.0 : 0.0;
    case Filter::bilinear:
      x = std::fabs(x);
      return x < 1.0 ? 1.0 - x : 0.0;
    case Filter::hamming:
      x = std::fabs(x);
      if (x == 0.0) return 1.0;
      if (x >= 1.0) return 0.0;
      x *= kPi;
      return std::sin(x) / x * (0.54F + 0.46F * std::cos(x));
    case Filter::bicubic: {
      constexpr double a = -0.5;
      x = std::fabs(x);
      if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
      if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
      return 0.0;
    }
    case Filter::lanczos:
      return x >= -3.0 && x < 3.0 ? sinc(x) * sinc(x / 3) : 0.0;
    case Filter::nearest:
      break;
  }
  return 0.0;
}

double support(Filter f) {
  switch (f) {
    case Filter::box:
      return 0.5;
    case Filter::bilinear:
    case Filter::hamming:
      return 1.0;
    case Filter::bicubic:
      return 2.0;
    case Filter::lanczos:
      return 3.0;
    case Filter::nearest:
      break;
  }
  return 0.0;
}

// For each output position along one axis: the first input index it reads,
// how many it reads, and their fixed-point weights (`stride` per output).
struct Taps {
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;
  int stride = 0;
};

Taps taps_for(std::uint32_t in_size, std::uint32_t out_size, Filter filter) {
  // Pillow computes the extent in single precision (its box is float).
  const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
  const double stretch = std::max(scale, 1.0);  // shrinking widens the filter: the antialiasing
  const double radius = support(filter) * stretch;
  Taps t;
  t.stride = static_cast<int>(std::ceil(radius)) * 2 + 1;
  t.first.resize(out_size);
  t.count.resize(out_size);
  t.weights.assign(static_cast<std::size_t>(out_size) * static_cast<std::size_t>(t.stride), 0);
  std::vector<double> w(static_cast<std::size_t>(t.stride));
  const double inverse = 1.0 / stretch;  // multiplied, as Pillow does: dividing can differ in the last bit
  for (std::uint32_t o = 0; o < out_size; ++o) {
    const double centre = (o + 0.5) * scale;
    // Truncation toward zero, then clamping, as Pillow rounds the window's ends.
    const int lo = std::max(static_cast<int>(centre - radius + 0.5), 0);
    const int hi = std::min(static_cast<int>(centre + radius + 0.5), static_cast<int>(in_size));
    const int n = hi - lo;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      w[static_cast<std::size_t>(i)] = weight(filter, (i + lo - centre + 0.5) * inverse);
      sum += w[static_cast<std::size_t>(i)];
    }
    std::int32_t* out = &t.weights[static_cast<std::size_t>(o) * static_cast<std::size_t>(t.stride)];
    for (int i = 0; i < n; ++i) {
      const double v = sum != 0.0 ? w[static_cast<std::size_t>(i)] / sum : w[static_cast<std::size_t>(i)];
      // Rounded half away from zero, by truncating v ± 0.5.
      out[i] = static_cast<std::int32_t>(v < 0 ? -0.5 + v * (1 << kPrecisionBits) : 0.5 + v * (1 << kPrecisionBits));
    }
    t.first[o] = lo;
    t.count[o] = n;
  }
  return t;
}

inline std::uint8_t clip8(std::int32_t acc) {
  const std::int32_t v = acc >> kPrecisionBits;  // arithmetic: a negative sum clips to 0
  return static_cast<std::uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

constexpr std::int32_t kHalf = 1 << (kPrecisionBits - 1);

// Rows [row0, row0 + rows) of `src` (width x C) to out_width x C each.
template <int C>
void horizontal(const std::uint8_t* src, std::size_t width, std::size_t row0, std::size_t rows, const Taps& t,
                std::uint8_t* dst, std::size_t out_width) {
  for (std::size_t y = 0; y < rows; ++y) {
    const std::uint8_t* __restrict in = src + (row0 + y) * width * C;
    std::uint8_t* __restrict out = dst + y * out_width * C;
    for (std::size_t x = 0; x < out_width; ++x) {
      const std::int32_t* __restrict k = &t.weights[x * static_cast<std::size_t>(t.stride)];
      const std::uint8_t* __restrict p = in + static_cast<std::size_t>(t.first[x]) * C;
      const int n = t.count[x];
      if constexpr (C == 3) {
        std::int32_t a0 = kHalf, a1 = kHalf, a2 = kHalf;
        for (int i = 0; i < n; ++i) {
          const std::int32_t w = k[i];
          a0 += p[3 * i] * w;
          a1 += p[3 * i + 1] * w;
          a2 += p[3 * i + 2] * w;
        }
        out[x * 3] = clip8(a0);
        out[x * 3 + 1] = clip8(a1);
        out[x * 3 + 2] = clip8(a2);
      } else {
        std::int32_t acc[C];
        for (int c = 0; c < C; ++c)
          acc[c] = kHalf;
        for (int i = 0; i < n; ++i)
          for (int c = 0; c < C; ++c)
            acc[c] += p[i * C + c] * k[i];
        for (int c = 0; c < C; ++c)
          out[x * C + c] = clip8(acc[c]);
      }
    }
  }
}

// Each output row is a weighted sum of whole input rows: the inner loop runs
// along a row's bytes, which the compiler vectorises.
void vertical(const std::uint8_t* src, std::size_t row_bytes, const Taps& t, std::uint8_t* dst, std::size_t out_height,
              std::vector<std::int32_t>& acc) {
  acc.resize(row_bytes);
  for (std::size_t y = 0; y < out_height; ++y) {
    const std::int32_t* k = &t.weights[y * static_cast<std::size_t>(t.stride)];
    std::fill(acc.begin(), acc.end(), kHalf);
    std::int32_t* __restrict a = acc.data();
    for (int i = 0, n = t.count[y]; i < n; ++i) {
      const std::uint8_t* __restrict in = src + static_cast<std::size_t>(t.first[y] + i) * row_bytes;
      const std::int32_t w = k[i];
      for (std::size_t b = 0; b < row_bytes; ++b)
        a[b] += in[b] * w;
    }
    std::uint8_t* __restrict out = dst + y * row_bytes;
    for (std::size_t b = 0; b < row_bytes; ++b)
      out[b] = clip8(a[b]);
  }
}

void horizontal_any(const std::uint8_t* src, std::size_t width, std::size_t channels, std::size_t row0,
                    std::size_t rows, const Taps& t, std::uint8_t* dst, std::size_t out_width) {
  switch (channels) {
    case 1:
      return horizontal<1>(src, width, row0, rows, t, dst, out_width);
    case 2:
      return horizontal<2>(src, width, row0, rows, t, dst, out_width);
    case 3:
      return horizontal<3>(src, width, row0, rows, t, dst, out_width);
    default:
      return horizontal<4>(src, width, row0, rows, t, dst, out_width);
  }
}

// Pillow's NEAREST goes through its affine transform: the source position
// starts half a step in and is accumulated step by step (not multiplied), so
// the same floating-point sums pick the same pixels.
std::vector<std::size_t> nearest_index(std::uint32_t in_size, std::uint32_t out_size) {
  const double step = static_cast<double>(static_cast<float>(in_size)) / out_size;
  std::vector<std::size_t> index(out_size);
  double pos = step * 0.5;
  for (std::uint32_t o = 0; o < out_size; ++o, pos += step)
    index[o] = std::min(static_cast<std::size_t>(pos), static_cast<std::size_t>(in_size) - 1);
  return index;
}

void nearest(const std::uint8_t* src, std::uint32_t width, std::uint32_t height, std::size_t channels,
             std::uint8_t* dst, std::uint32_t out_width, std::uint32_t out_height) {
  const std::vector<std::size_t> xs = nearest_index(width, out_width), ys = nearest_index(height, out_height);
  for (std::uint32_t y = 0; y < out_height; ++y) {
    const std::uint8_t* in = src + ys[y] * width * channels;
    std::uint8_t* out = dst + static_cast<std::size_t>(y) * out_width * channels;
    for (std::uint32_t x = 0; x < out_width; ++x)
      std::memcpy(out + x * channels, in + xs[x] * channels, channels);
  }
}

}  // namespace

void resample(const std::uint8_t* src, std::uint32_t width, std::uint32_t height, std::uint32_t channels,
              std::uint8_t* dst, std::uint32_t out_width, std::uint32_t out_height, Filter filter) {
  const std::size_t c = channels;
  if (width == out_width && height == out_height) {
    std::memcpy(dst, src, static_cast<std::size_t>(width) * height * c);
    return;
  }
  if (filter == Filter::nearest) return nearest(src, width, height, c, dst, out_width, out_height);
  const bool need_horizontal = out_width != width, need_vertical = out_height != height;
  if (!need_vertical) {
    const Taps h = taps_for(width, out_width, filter);
    return horizontal_any(src, width, c, 0, height, h, dst, out_width);
  }
  Taps v = taps_for(height, out_height, filter);
  thread_local std::vector<std::int32_t> acc;
  if (!need_horizontal) return vertical(src, static_cast<std::size_t>(width) * c, v, dst, out_height, acc);
  // Only the rows the vertical pass reads are resampled horizontally.
  const int row0 = v.first.front();
  const int row_end = v.first.back() + v.count.back();
  for (int& f : v.first)
    f -= row0;
  const Taps h = taps_for(width, out_width, filter);
  thread_local std::vector<std::uint8_t> between;
  between.resize(static_cast<std::size_t>(row_end - row0) * out_width * c);
  horizontal_any(src, width, c, static_cast<std::size_t>(row0), static_cast<std::size_t>(row_end - row0), h,
                 between.data(), out_width);
  vertical(between.data(), static_cast<std::size_t>(out_width) * c, v, dst, out_height, acc);
}

}  // namespace inferprof::image
