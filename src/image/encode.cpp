#include <png.h>

#include <algorithm>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>

#include "image/image.hpp"
#include "image/jpeg_errors.hpp"

namespace inferprof::image {

std::string synth_picture(std::uint32_t width, std::uint32_t height, std::uint64_t seed) {
  std::string rgb(static_cast<std::size_t>(width) * height * 3, '\0');
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const double fx = 1 + 5 * unit(rng), fy = 1 + 5 * unit(rng), phase = 6.28 * unit(rng);
  struct Disc {
    double cx, cy, r;
    std::uint8_t c[3];
  } discs[6];
  for (auto& d : discs) {
    d.cx = unit(rng) * width;
    d.cy = unit(rng) * height;
    d.r = (0.05 + 0.2 * unit(rng)) * std::min(width, height);
    for (auto& c : d.c)
      c = static_cast<std::uint8_t>(rng() & 0xFF);
  }
  std::minstd_rand noise(static_cast<std::uint32_t>(seed));
  for (std::uint32_t y = 0; y < height; ++y) {
    const double v = static_cast<double>(y) / std::max<std::uint32_t>(height, 1);
    for (std::uint32_t x = 0; x < width; ++x) {
      const double u = static_cast<double>(x) / std::max<std::uint32_t>(width, 1);
      double c[3] = {127.5 + 127.5 * std::sin(6.28 * fx * u + phase), 127.5 + 127.5 * std::sin(6.28 * fy * v),
                     255 * (u + v) / 2};
      for (const auto& d : discs) {
        const double dx = x - d.cx, dy = y - d.cy;
        if (dx * dx + dy * dy < d.r * d.r)
          for (int k = 0; k < 3; ++k)
            c[k] = 0.3 * c[k] + 0.7 * d.c[k];
      }
      std::uint8_t* px = reinterpret_cast<std::uint8_t*>(&rgb[(static_cast<std::size_t>(y) * width + x) * 3]);
      for (int k = 0; k < 3; ++k) {
        const double n = c[k] + static_cast<double>(noise() % 9) - 4;
        px[k] = static_cast<std::uint8_t>(std::clamp(n, 0.0, 255.0));
      }
    }
  }
  return rgb;
}

std::string encode_jpeg(const std::string& rgb, std::uint32_t width, std::uint32_t height, int quality) {
  jpeg_compress_struct cinfo;
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = jpeg_fail;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    throw DecodeError{std::string("cannot encode JPEG: ") + errors.message};
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const std::size_t stride = static_cast<std::size_t>(width) * 3;
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = reinterpret_cast<JSAMPROW>(const_cast<char*>(rgb.data() + cinfo.next_scanline * stride));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<const char*>(buffer), size);
  std::free(buffer);
  return out;
}

std::string encode_png(const std::string& rgb, std::uint32_t width, std::uint32_t height) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_to_memory(&image, nullptr, &size, 0, rgb.data(), 0, nullptr))
    throw DecodeError{std::string("cannot encode PNG: ") + image.message};
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&image, out.data(), &size, 0, rgb.data(), 0, nullptr))
    throw DecodeError{std::string("cannot encode PNG: ") + image.message};
  out.resize(size);
  return out;
}

}  // namespace inferprof::image
