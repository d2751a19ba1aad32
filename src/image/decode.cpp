#include <fmt/format.h>
#include <openssl/evp.h>
#include <png.h>

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <limits>

#include "image/image.hpp"
#include "image/jpeg_errors.hpp"

namespace inferprof::image {

namespace {

constexpr std::uint8_t kJpegMagic[] = {0xFF, 0xD8, 0xFF};
constexpr std::uint8_t kPngMagic[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

[[noreturn]] void too_large(const Header& h, std::uint64_t max_pixels) {
  throw DecodeError{fmt::format("{}x{} {} is {} pixels, over the limit of {} (checked before decoding)", h.width,
                                h.height, format_name(h.format), static_cast<std::uint64_t>(h.width) * h.height,
                                max_pixels)};
}

// Warnings (level -1) are "Premature end of JPEG file" and "Corrupt JPEG
// data": libjpeg would go on and fill the rest with grey. A profiler fed a
// broken file should say so, as PIL does ("image file is truncated").
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_fail(cinfo);
}

// Only trivially destructible locals live across setjmp/longjmp here.
void decode_jpeg(const std::uint8_t* data, std::size_t size, std::uint64_t max_pixels,
                 const std::function<std::uint8_t*(const Header&)>& alloc) {
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.pub);
  errors.pub.error_exit = jpeg_fail;
  errors.pub.emit_message = jpeg_message;
  errors.message[0] = '\0';
  if (setjmp(errors.jump) != 0) {
    jpeg_destroy_decompress(&cinfo);
    throw DecodeError{fmt::format("corrupt or truncated JPEG (libjpeg: {})", errors.message)};
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const Header header{Format::jpeg, cinfo.image_width, cinfo.image_height};
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    throw DecodeError{"CMYK JPEG: only greyscale and RGB/YCbCr JPEGs are supported"};
  }
  if (static_cast<std::uint64_t>(header.width) * header.height > max_pixels) {
    jpeg_destroy_decompress(&cinfo);
    too_large(header, max_pixels);
  }
  // libjpeg's defaults (islow DCT, fancy upsampling) are PIL's too.
  cinfo.out_color_space = JCS_RGB;
  std::uint8_t* out = nullptr;
  try {
    out = alloc(header);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  jpeg_start_decompress(&cinfo);
  const std::size_t stride = static_cast<std::size_t>(cinfo.output_width) * 3;
  JSAMPROW rows[16];
  while (cinfo.output_scanline < cinfo.output_height) {
    const JDIMENSION first = cinfo.output_scanline;
    const JDIMENSION n = std::min<JDIMENSION>(16, cinfo.output_height - first);
    for (JDIMENSION i = 0; i < n; ++i)
      rows[i] = out + (first + i) * stride;
    jpeg_read_scanlines(&cinfo, rows, n);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
}

// libpng's simplified API: no setjmp of ours, errors in image.message.
void decode_png(const std::uint8_t* data, std::size_t size, std::uint64_t max_pixels,
                const std::function<std::uint8_t*(const Header&)>& alloc) {
  png_image image;
  std::memset(&image, 0, sizeof image);
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, data, size))
    throw DecodeError{fmt::format("corrupt PNG (libpng: {})", image.message)};
  const Header header{Format::png, image.width, image.height};
  if (static_cast<std::uint64_t>(header.width) * header.height > max_pixels) {
    png_image_free(&image);
    too_large(header, max_pixels);
  }
  image.format = PNG_FORMAT_RGB;
  std::uint8_t* out = nullptr;
  try {
    out = alloc(header);
  } catch (...) {
    png_image_free(&image);
    throw;
  }
  // finish_read frees the image's state whether it succeeds or not.
  if (!png_image_finish_read(&image, nullptr, out, 0, nullptr))
    throw DecodeError{fmt::format("corrupt or truncated PNG (libpng: {})", image.message)};
}

}  // namespace

Format sniff(const std::uint8_t* data, std::size_t size) {
  if (size >= sizeof kJpegMagic && std::memcmp(data, kJpegMagic, sizeof kJpegMagic) == 0) return Format::jpeg;
  if (size >= sizeof kPngMagic && std::memcmp(data, kPngMagic, sizeof kPngMagic) == 0) return Format::png;
  return Format::unknown;
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::jpeg:
      return "JPEG";
    case Format::png:
      return "PNG";
    case Format::unknown:
      break;
  }
  return "unknown";
}

void decode_rgb(const std::uint8_t* data, std::size_t size, std::uint64_t max_pixels,
                const std::function<std::uint8_t*(const Header&)>& alloc) {
  switch (sniff(data, size)) {
    case Format::jpeg:
      return decode_jpeg(data, size, max_pixels, alloc);
    case Format::png:
      return decode_png(data, size, max_pixels, alloc);
    case Format::unknown:
      break;
  }
  if (size == 0) throw DecodeError{"empty (0 bytes): not a JPEG or PNG"};
  std::string start;
  for (std::size_t i = 0; i < std::min<std::size_t>(size, 4); ++i)
    start += fmt::format("{:02x}", data[i]);
  throw DecodeError{fmt::format("not a JPEG or PNG (starts with bytes {})", start)};
}

std::string decode_base64(std::string_view text) {
  if (text.size() % 4 != 0)
    throw DecodeError{
        fmt::format("not base64: {} characters, not a multiple of 4 (padded base64 expected)", text.size())};
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw DecodeError{"base64 payload over 2 GB"};
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) throw DecodeError{"not base64 (a character outside A-Z, a-z, 0-9, '+', '/' and '=' padding)"};
  // EVP_DecodeBlock counts the bytes that '=' padding stands for.
  std::size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=')
    ++padding;
  out.resize(static_cast<std::size_t>(n) - padding);
  return out;
}

}  // namespace inferprof::image
