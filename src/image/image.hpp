#pragma once
// Encoded images (JPEG via libjpeg-turbo, PNG via libpng, WebP via libwebp) to RGB pixels, and
// base64 payloads to bytes. No libtorch here: the pipeline allocates the
// pixel buffer (a tensor) once the header has been read and checked.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace inferprof::image {

enum class Format : std::uint8_t { unknown, jpeg, png, webp };
// By magic bytes, not by file name.
Format sniff(const std::uint8_t* data, std::size_t size);
std::string_view format_name(Format f);  // "JPEG", "PNG", "WebP", "unknown"

struct Header {
  Format format = Format::unknown;
  std::uint32_t width = 0, height = 0;
};

// Refused before any pixel buffer exists (a 30000 x 30000 image is 2.7 GB of
// RGB): PIL's limit (Image.MAX_IMAGE_PIXELS, past which it warns of a
// decompression bomb), so that what a PIL service would flag is refused here.
inline constexpr std::uint64_t kDefaultMaxPixels = 89'478'485;

// Thrown for anything wrong with the bytes (not an image, corrupt, truncated,
// too large); the caller adds which request and file.
struct DecodeError {
  std::string what;
};

// Decodes `data` to 8-bit interleaved RGB (H x W x 3, row-major): grey is
// expanded, palettes are expanded, 16-bit samples are reduced to 8, alpha is
// dropped, CMYK converted (as PIL's convert("RGB")). After reading the header and checking
// width * height <= max_pixels, calls alloc(header), which returns a buffer of
// width * height * 3 bytes, and decodes into it. Libjpeg warnings (premature
// end of data, corrupt data) are errors: a truncated file is refused, not
// padded with grey. Throws DecodeError.
void decode_rgb(const std::uint8_t* data, std::size_t size, std::uint64_t max_pixels,
                const std::function<std::uint8_t*(const Header&)>& alloc);

// Standard base64 (RFC 4648, with padding; no line breaks) through OpenSSL.
// Throws DecodeError when `text` is not that.
std::string decode_base64(std::string_view text);

}  // namespace inferprof::image

namespace inferprof::image {

// A synthetic picture (smooth colour gradients, discs and a little noise, so
// that it compresses like a photograph rather than a flat test card), the
// same for the same size and seed: H x W x 3 RGB.
std::string synth_picture(std::uint32_t width, std::uint32_t height, std::uint64_t seed);
// Encoders for demo and test images (libjpeg-turbo, libpng). Throw DecodeError.
std::string encode_jpeg(const std::string& rgb, std::uint32_t width, std::uint32_t height, int quality);
std::string encode_png(const std::string& rgb, std::uint32_t width, std::uint32_t height);

}  // namespace inferprof::image
