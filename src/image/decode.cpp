#include <fmt/format.h>
#include <openssl/evp.h>
#include <png.h>
#ifdef INFERPROF_HAS_WEBP
#include <webp/decode.h>
#endif

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

#include "image/image.hpp"
#include "image/jpeg_errors.hpp"

namespace inferprof::image {

namespace {

constexpr std::uint8_t kJpegMagic[] = {0xFF, 0xD8, 0xFF};
constexpr std::uint8_t kPngMagic[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

[[noreturn]] void too_large(const Header& h, std::uint64_t max_pixels) {
  throw DecodeError{fmt::format(
      "{}x{} {} is {} pixels, over the limit of {} (checked before decoding; the decode op's "
      "max_pixels sets it)",
      h.width, h.height, format_name(h.format), static_cast<std::uint64_t>(h.width) * h.height, max_pixels)};
}

// Warnings (level -1) are "Premature end of JPEG file" and "Corrupt JPEG
// data": libjpeg would go on and fill the rest with grey. A profiler fed a
// broken file should say so, as PIL does ("image file is truncated").
void jpeg_message(j_common_ptr cinfo, int level) {
  if (level < 0) jpeg_fail(cinfo);
}

// PIL's Image.open(f).convert('RGB') of a CMYK JPEG: PIL reads every CMYK
// JPEG as Adobe writes them, inverted (it unpacks "CMYK;I"), then converts
// each channel as (255 - k) * (255 - c) / 255 with its integer rounding
// (t = a * b + 128; (t + (t >> 8)) >> 8). Here `in` holds the stored
// (inverted) bytes, so 255 - c is the stored c and 255 - k the stored k.
void cmyk_to_rgb(const std::uint8_t* in, std::uint8_t* out, std::size_t width) {
  for (std::size_t x = 0; x < width; ++x, in += 4, out += 3) {
    const int nk = in[3];
    for (int c = 0; c < 3; ++c) {
      const int t = (255 - in[c]) * nk + 128;
      out[c] = static_cast<std::uint8_t>(nk - (((t >> 8) + t) >> 8));
    }
  }
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
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  if (static_cast<std::uint64_t>(header.width) * header.height > max_pixels) {
    jpeg_destroy_decompress(&cinfo);
    too_large(header, max_pixels);
  }
  // libjpeg's defaults (islow DCT, fancy upsampling) are PIL's too.
  // CMYK (and YCCK, which libjpeg turns into CMYK) is converted per row below, as PIL does.
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  std::uint8_t* out = nullptr;
  try {
    out = alloc(header);
  } catch (...) {
    jpeg_destroy_decompress(&cinfo);
    throw;
  }
  jpeg_start_decompress(&cinfo);
  const std::size_t stride = static_cast<std::size_t>(cinfo.output_width) * 3;
  if (cmyk) {
    // From libjpeg's pool: freed by jpeg_destroy_decompress, on a longjmp too.
    JSAMPARRAY row =
        (*cinfo.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE, cinfo.output_width * 4, 1);
    while (cinfo.output_scanline < cinfo.output_height) {
      std::uint8_t* dst = out + static_cast<std::size_t>(cinfo.output_scanline) * stride;
      jpeg_read_scanlines(&cinfo, row, 1);
      cmyk_to_rgb(row[0], dst, cinfo.output_width);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return;
  }
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

// WebP through libwebp, as PIL decodes it (the same library, its default
// fancy upsampling of lossy chroma); alpha is dropped, as convert('RGB') drops it.
void decode_webp(const std::uint8_t* data, std::size_t size, std::uint64_t max_pixels,
                 const std::function<std::uint8_t*(const Header&)>& alloc) {
#ifdef INFERPROF_HAS_WEBP
  WebPBitstreamFeatures features;
  if (WebPGetFeatures(data, size, &features) != VP8_STATUS_OK)
    throw DecodeError{"corrupt or truncated WebP (libwebp cannot read its header)"};
  // PIL would give the first frame; a trace of animations is more likely a mistake.
  if (features.has_animation) throw DecodeError{"animated WebP: only still images are supported"};
  const Header header{Format::webp, static_cast<std::uint32_t>(features.width),
                      static_cast<std::uint32_t>(features.height)};
  if (static_cast<std::uint64_t>(header.width) * header.height > max_pixels) too_large(header, max_pixels);
  const std::size_t stride = static_cast<std::size_t>(header.width) * 3;
  std::uint8_t* out = alloc(header);
  if (!WebPDecodeRGBInto(data, size, out, stride * header.height, static_cast<int>(stride)))
    throw DecodeError{"corrupt or truncated WebP (libwebp could not decode it)"};
#else
  (void)data, (void)size, (void)max_pixels, (void)alloc;
  throw DecodeError{"WebP: this inferprof was built without libwebp (install libwebp-dev and rebuild)"};
#endif
}

// PNG through libpng's progressive-free low-level API, with the conversions
// PIL's Image.open(f).convert('RGB') makes: alpha dropped, not composited
// (the simplified API composited onto whatever the buffer held: the same
// RGBA file gave different tensors), 16-bit samples reduced to their high
// byte (the simplified API took them as linear light and converted to sRGB:
// 10 became 58), palette and grey expanded, no gamma correction. One
// difference, stated in docs/profiles.md: Pillow opens 16-bit grey as mode
// "I", whose convert('RGB') saturates every value above 255; here it keeps
// its high byte as 16-bit colour does.
struct PngSource {
  const std::uint8_t* data;
  std::size_t size, pos;
  char message[200];
};

void png_read_memory(png_structp png, png_bytep out, png_size_t n) {
  auto* src = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > src->size - src->pos) png_error(png, "truncated file");
  std::memcpy(out, src->data + src->pos, n);
  src->pos += n;
}

[[noreturn]] void png_failed(png_structp png, png_const_charp message) {
  auto* src = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(src->message, sizeof src->message, "%s", message);
  png_longjmp(png, 1);
}

void png_warned(png_structp, png_const_charp) {}

// The two steps that may longjmp, each with nothing to destroy in its frame.
bool png_read_header(png_structp png, png_infop info) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_info(png, info);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_palette_to_rgb(png);
  png_set_expand_gray_1_2_4_to_8(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  return true;
}

bool png_read_pixels(png_structp png, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  return true;
}

void decode_png(const std::uint8_t* data, std::size_t size, std::uint64_t max_pixels,
                const std::function<std::uint8_t*(const Header&)>& alloc) {
  PngSource src{data, size, 0, {}};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_failed, png_warned);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  struct Release {
    png_structp* png;
    png_infop* info;
    ~Release() {
      if (*png) png_destroy_read_struct(png, info, nullptr);
    }
  } release{&png, &info};
  if (!png || !info) throw DecodeError{"cannot start libpng (out of memory)"};
  png_set_read_fn(png, &src, png_read_memory);
  // Dimensions are checked against max_pixels below; libpng's own limit would only add a second message.
  png_set_user_limits(png, 0x7fffffff, 0x7fffffff);
  if (!png_read_header(png, info)) throw DecodeError{fmt::format("corrupt PNG (libpng: {})", src.message)};
  const Header header{Format::png, png_get_image_width(png, info), png_get_image_height(png, info)};
  if (static_cast<std::uint64_t>(header.width) * header.height > max_pixels) too_large(header, max_pixels);
  const std::size_t stride = static_cast<std::size_t>(header.width) * 3;
  if (png_get_rowbytes(png, info) != stride || png_get_channels(png, info) != 3 || png_get_bit_depth(png, info) != 8)
    throw DecodeError{fmt::format("PNG converts to {} channels of {} bits, not RGB 8-bit", png_get_channels(png, info),
                                  png_get_bit_depth(png, info))};
  std::uint8_t* out = alloc(header);
  std::vector<png_bytep> rows(header.height);
  for (std::uint32_t y = 0; y < header.height; ++y)
    rows[y] = out + static_cast<std::size_t>(y) * stride;
  if (!png_read_pixels(png, rows.data()))
    throw DecodeError{fmt::format("corrupt or truncated PNG (libpng: {})", src.message)};
}

}  // namespace

Format sniff(const std::uint8_t* data, std::size_t size) {
  if (size >= sizeof kJpegMagic && std::memcmp(data, kJpegMagic, sizeof kJpegMagic) == 0) return Format::jpeg;
  if (size >= sizeof kPngMagic && std::memcmp(data, kPngMagic, sizeof kPngMagic) == 0) return Format::png;
  // A RIFF container ("RIFF", length, "WEBP").
  if (size >= 12 && std::memcmp(data, "RIFF", 4) == 0 && std::memcmp(data + 8, "WEBP", 4) == 0) return Format::webp;
  return Format::unknown;
}

std::string_view format_name(Format f) {
  switch (f) {
    case Format::jpeg:
      return "JPEG";
    case Format::png:
      return "PNG";
    case Format::webp:
      return "WebP";
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
    case Format::webp:
      return decode_webp(data, size, max_pixels, alloc);
    case Format::unknown:
      break;
  }
  if (size == 0) throw DecodeError{"empty (0 bytes): not a JPEG, PNG or WebP"};
  std::string start;
  for (std::size_t i = 0; i < std::min<std::size_t>(size, 4); ++i)
    start += fmt::format("{:02x}", data[i]);
  throw DecodeError{fmt::format("not a JPEG, PNG or WebP (starts with bytes {})", start)};
}

std::string decode_base64(std::string_view text) {
  if (text.size() % 4 != 0)
    throw DecodeError{
        fmt::format("not base64: {} characters, not a multiple of 4 (padded base64 expected)", text.size())};
  if (text.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw DecodeError{"base64 payload over 2 GB"};
  // RFC 4648: '=' only pads the last group, one or two of them (OpenSSL would take "====" as a byte).
  if (const std::size_t pad = text.find('=');
      pad != std::string_view::npos &&
      (pad + 2 < text.size() || text.find_first_not_of('=', pad) != std::string_view::npos))
    throw DecodeError{fmt::format("not base64: '=' at character {} of {} (padding may only end the text, at most two)",
                                  pad + 1, text.size())};
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
