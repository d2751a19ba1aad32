// The image decoders (libjpeg-turbo, libpng) as the decode op calls them:
// decode_rgb with a pixel limit, into a buffer it sizes from the header. A
// refusal must be a DecodeError of one printable line; a success must fill
// exactly width x height x 3 bytes, and decoding the same bytes again into a
// buffer filled differently must give the same pixels (an RGBA PNG once read
// the buffer as its background).
#include <stdexcept>
#include <string>

#include "fuzz_support.hpp"
#include "image/image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace inferprof;
  constexpr std::uint64_t kMaxPixels = 1 << 20;  // small pictures only: a fuzz input is a few KB
  auto decode = [&](char fill) {
    std::string out;
    image::decode_rgb(data, size, kMaxPixels, [&](const image::Header& h) {
      if (static_cast<std::uint64_t>(h.width) * h.height > kMaxPixels)
        throw std::logic_error("decode_rgb asked for a buffer over its pixel limit");
      out.assign(static_cast<std::size_t>(h.width) * h.height * 3, fill);
      return reinterpret_cast<std::uint8_t*>(out.data());
    });
    return out;
  };
  try {
    const std::string first = decode('\x00');
    if (decode('\xff') != first) throw std::logic_error("the same image decoded twice gave different pixels");
    return 0;
  } catch (const image::DecodeError& e) {
    if (e.what.empty()) throw std::logic_error("fuzz: a DecodeError with an empty message");
    for (char c : e.what)
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
        throw std::logic_error("fuzz: decode error not one printable line: " + e.what);
    return -1;
  }
}
