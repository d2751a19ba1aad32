// Image inputs: the decoders (libjpeg-turbo, libpng), base64, the image ops of
// the preprocessor, and the image-classification-jpeg profile against an
// independent reference (PIL + torchvision, run through /usr/bin/python3).
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

// After <cstddef> and <cstdio>: jpeglib.h uses size_t and FILE without including them.
#include <jpeglib.h>
#include <zlib.h>

#include "image/image.hpp"
#include "image/resample.hpp"
#include "inferprof/error.hpp"
#include "inferprof/profile.hpp"
#include "temp_dir.hpp"
#include "text_util.hpp"
#include "torch_doctest.hpp"  // libtorch, then doctest (the order is kept inside)

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

using inferprof::testing::slurp;

struct Pixels {
  std::string rgb;
  image::Header header;
};

Pixels decode(const std::string& bytes, std::uint64_t max_pixels = image::kDefaultMaxPixels) {
  Pixels p;
  image::decode_rgb(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), max_pixels,
                    [&](const image::Header& h) {
                      p.header = h;
                      p.rgb.assign(static_cast<std::size_t>(h.width) * h.height * 3, '\0');
                      return reinterpret_cast<std::uint8_t*>(p.rgb.data());
                    });
  return p;
}

std::string decode_error(const std::string& bytes) {
  try {
    decode(bytes);
  } catch (const image::DecodeError& e) {
    return e.what;
  }
  return "(no error)";
}

// A PNG whose header claims another size, with a valid CRC: only the pixel
// limit stands between it and a huge allocation.
std::string png_claiming(std::uint32_t width, std::uint32_t height) {
  std::string png = image::encode_png(image::synth_picture(1, 1, 1), 1, 1);
  auto put32 = [&](std::size_t at, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
      png[at + i] = static_cast<char>((v >> (24 - 8 * i)) & 0xFF);
  };
  put32(16, width);  // IHDR data starts at 16: width, height
  put32(20, height);
  const auto crc = crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17);  // "IHDR" + 13 bytes
  put32(29, static_cast<std::uint32_t>(crc));
  return png;
}

// A flat CMYK picture as libjpeg writes it (stored values `cmyk`, in `space`:
// JCS_CMYK, or JCS_YCCK as Photoshop saves), at quality 100.
std::string cmyk_jpeg(std::uint32_t w, std::uint32_t h, const std::array<std::uint8_t, 4>& cmyk, J_COLOR_SPACE space) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, space);
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  std::vector<unsigned char> row(static_cast<std::size_t>(w) * 4);
  for (std::size_t x = 0; x < w; ++x)
    std::memcpy(&row[x * 4], cmyk.data(), 4);
  JSAMPROW r = row.data();
  while (c.next_scanline < h)
    jpeg_write_scanlines(&c, &r, 1);
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::string out(reinterpret_cast<char*>(buf), size);
  std::free(buf);
  return out;
}

// A JPEG whose frame header (SOF0) claims another size.
std::string jpeg_claiming(std::uint16_t width, std::uint16_t height) {
  std::string jpg = image::encode_jpeg(image::synth_picture(8, 8, 1), 8, 8, 90);
  const auto sof = jpg.find("\xFF\xC0");
  REQUIRE(sof != std::string::npos);
  jpg[sof + 5] = static_cast<char>(height >> 8);
  jpg[sof + 6] = static_cast<char>(height & 0xFF);
  jpg[sof + 7] = static_cast<char>(width >> 8);
  jpg[sof + 8] = static_cast<char>(width & 0xFF);
  return jpg;
}

// A PNG written by hand (zlib for the data, crc32 for the chunks): IHDR with
// this bit depth and colour type, one IDAT of `rows` (filter 0 prepended), an
// optional PLTE and tRNS, IEND. libpng's writer would not make some of these.
std::string png_of(std::uint32_t width, std::uint32_t height, int bit_depth, int color_type,
                   const std::vector<std::string>& rows, const std::string& plte = "", const std::string& trns = "") {
  auto be32 = [](std::uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
                       static_cast<char>(v)};
  };
  auto chunk = [&](const std::string& type, const std::string& body) {
    const std::string typed = type + body;
    const auto crc = crc32(0, reinterpret_cast<const Bytef*>(typed.data()), static_cast<uInt>(typed.size()));
    return be32(static_cast<std::uint32_t>(body.size())) + typed + be32(static_cast<std::uint32_t>(crc));
  };
  std::string raw;
  for (const std::string& r : rows)
    raw += '\0' + r;
  std::string packed(compressBound(static_cast<uLong>(raw.size())), '\0');
  uLongf packed_size = static_cast<uLongf>(packed.size());
  REQUIRE(compress(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(raw.data()),
                   static_cast<uLong>(raw.size())) == Z_OK);
  packed.resize(packed_size);
  std::string ihdr = be32(width) + be32(height);
  ihdr += {static_cast<char>(bit_depth), static_cast<char>(color_type), 0, 0, 0};
  std::string png = "\x89PNG\r\n\x1a\n" + chunk("IHDR", ihdr);
  if (!plte.empty()) png += chunk("PLTE", plte);
  if (!trns.empty()) png += chunk("tRNS", trns);
  return png + chunk("IDAT", packed) + chunk("IEND", "");
}

std::string be16(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) {
    out += static_cast<char>((v >> 8) & 0xFF);
    out += static_cast<char>(v & 0xFF);
  }
  return out;
}

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values)
    out += static_cast<char>(v);
  return out;
}

at::Tensor bytes_tensor(const std::string& bytes) {
  at::Tensor t = at::empty({static_cast<std::int64_t>(bytes.size())}, at::kByte);
  std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

TraceRequest image_request(const std::string& file, std::uint64_t line) {
  TraceRequest r;
  r.id = line;
  r.line = line;
  r.input.kind = InputSpec::Kind::image;
  r.input.file = file;
  return r;
}

std::vector<std::string> span_names(const RequestRecord& r) {
  std::vector<std::string> names;
  for (const auto& s : r.spans)
    names.emplace_back(NameTable::global().name(s.name));
  return names;
}

}  // namespace

TEST_SUITE("image") {
  TEST_CASE("PNG round-trips exactly, JPEG closely, 1x1 included") {
    for (auto [w, h] : {std::pair<std::uint32_t, std::uint32_t>{1, 1}, {37, 21}, {64, 48}}) {
      const std::string rgb = image::synth_picture(w, h, 7);
      const Pixels png = decode(image::encode_png(rgb, w, h));
      CHECK(png.header.format == image::Format::png);
      CHECK(png.header.width == w);
      CHECK(png.header.height == h);
      CHECK(png.rgb == rgb);
      const Pixels jpg = decode(image::encode_jpeg(rgb, w, h, 95));
      CHECK(jpg.header.format == image::Format::jpeg);
      CHECK(jpg.header.width == w);
      REQUIRE(jpg.rgb.size() == rgb.size());
      double total = 0;
      for (std::size_t i = 0; i < rgb.size(); ++i)
        total += std::abs(int(std::uint8_t(jpg.rgb[i])) - int(std::uint8_t(rgb[i])));
      // Lossy (4:2:0 chroma on small, sharp pictures: 12 to 32 levels on average at these sizes),
      // but the same picture: an unrelated one differs by about 85.
      if (w > 1) CHECK(total / static_cast<double>(rgb.size()) < 45.0);
    }
  }

  TEST_CASE("corrupt, truncated, foreign and oversized images are refused with what is wrong") {
    const std::string rgb = image::synth_picture(64, 48, 3);
    const std::string jpg = image::encode_jpeg(rgb, 64, 48, 90);
    const std::string png = image::encode_png(rgb, 64, 48);
    CHECK(decode_error(jpg.substr(0, jpg.size() / 2)) ==
          "corrupt or truncated JPEG (libjpeg: Premature end of JPEG file)");
    CHECK(decode_error(jpg.substr(0, 20)).rfind("corrupt or truncated JPEG (libjpeg: ", 0) == 0);
    std::string bad_crc = png;
    const auto idat = bad_crc.find("IDAT");
    REQUIRE(idat != std::string::npos);
    // The chunk's stored CRC, after its data (the length precedes "IDAT", big-endian).
    std::size_t len = 0;
    for (int i = 4; i >= 1; --i)
      len = (len << 8) | static_cast<std::uint8_t>(bad_crc[idat - static_cast<std::size_t>(i)]);
    bad_crc[idat + 4 + len] = static_cast<char>(bad_crc[idat + 4 + len] ^ 0x55);
    CHECK(decode_error(bad_crc) == "corrupt or truncated PNG (libpng: IDAT: CRC error)");
    CHECK(decode_error(png.substr(0, png.size() - 30)).rfind("corrupt or truncated PNG (libpng: ", 0) == 0);
    CHECK(decode_error("GIF89a....") == "not a JPEG, PNG or WebP (starts with bytes 47494638)");
    CHECK(decode_error("") == "empty (0 bytes): not a JPEG, PNG or WebP");
    CHECK(decode_error(png_claiming(30000, 30000)) ==
          "30000x30000 PNG is 900000000 pixels, over the limit of 89478485 (checked before decoding; the decode op's "
          "max_pixels sets it)");
    CHECK(decode_error(jpeg_claiming(30000, 30000)) ==
          "30000x30000 JPEG is 900000000 pixels, over the limit of 89478485 (checked before decoding; the decode op's "
          "max_pixels sets it)");
    // PIL's limit: 10000 x 9999 (99,990,000 pixels, 1.67 GB and 12 s to decode its 97 KB as a PNG) is over it.
    CHECK(decode_error(png_claiming(10000, 9999))
              .rfind("10000x9999 PNG is 99990000 pixels, over the limit of 89478485", 0) == 0);
    // The limit is the profile's to set.
    CHECK_THROWS_AS(decode(png, 64 * 48 - 1), image::DecodeError);
    CHECK_NOTHROW(decode(png, 64 * 48));
  }

  TEST_CASE("base64 through OpenSSL") {
    CHECK(image::decode_base64("QUJD") == "ABC");
    CHECK(image::decode_base64("QUI=") == "AB");
    CHECK(image::decode_base64("QQ==") == "A");
    CHECK_THROWS_AS(image::decode_base64("QUJ"), image::DecodeError);
    CHECK_THROWS_AS(image::decode_base64("QU*D"), image::DecodeError);
    // RFC 4648: padding only ends the text, at most two '=' (OpenSSL alone reads "====" as one byte).
    for (const char* bad : {"====", "Q===", "QU=D", "QQ==QUJD", "=QUJ"}) {
      std::string what = "accepted";
      try {
        (void)image::decode_base64(bad);
      } catch (const image::DecodeError& e) {
        what = e.what;
      }
      CHECK_MESSAGE(what.rfind("not base64: '=' at character", 0) == 0, bad, ": ", what);
    }
    CHECK(image::decode_base64("QUJDQQ==") == "ABCA");
  }

  TEST_CASE("image ops: decode, shorter-side resize, torchvision's crop offsets, to_tensor, spans per op") {
    Profile p = load_profile(std::string(INFERPROF_TEST_PROFILES_DIR) + "/image-classification-jpeg.toml");
    inferprof::detail::Preprocessor pre(p.preprocess, "t.jsonl");
    RequestRecord r;
    const std::string jpg = image::encode_jpeg(image::synth_picture(320, 240, 5), 320, 240, 90);
    at::Tensor y = pre.run(bytes_tensor(jpg), image_request("x.jpg", 3), r, -1);
    CHECK((y.sizes().vec() == std::vector<std::int64_t>{1, 3, 224, 224}));
    CHECK((y.scalar_type() == at::kFloat));
    CHECK(y.is_contiguous());
    CHECK((span_names(r) == std::vector<std::string>{"decode", "resize", "center_crop", "to_tensor", "normalize"}));

    // A 1x1 picture becomes a constant 224x224 one.
    r = RequestRecord{};
    const std::string one = image::synth_picture(1, 1, 9);
    at::Tensor c = pre.run(bytes_tensor(image::encode_png(one, 1, 1)), image_request("one.png", 4), r, -1);
    CHECK((c.sizes().vec() == std::vector<std::int64_t>{1, 3, 224, 224}));
    const double expect_r = (static_cast<std::uint8_t>(one[0]) / 255.0 - 0.485) / 0.229;
    CHECK(c[0][0].min().item<float>() == doctest::Approx(expect_r).epsilon(1e-4));
    CHECK(c[0][0].max().item<float>() == doctest::Approx(expect_r).epsilon(1e-4));

    // Errors name the trace line and the file; exit 2.
    try {
      pre.run(bytes_tensor(jpg.substr(0, 100)), image_request("cut.jpg", 7), r, -1);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 2);
      CHECK(std::string(e.what()).rfind("t.jsonl:7: image 'cut.jpg': corrupt or truncated JPEG (libjpeg: ", 0) == 0);
    }

    Profile geo = parse_profile(R"(
[[preprocess]]
op = "decode"
[[preprocess]]
op = "resize"
size = 8
[[preprocess]]
op = "center_crop"
size = [2, 2]
)",
                                "geo.toml");
    // 32x18: the shorter side 18 -> 8, the longer int(8 * 32 / 18) = 14. uint8 in, uint8 out.
    at::Tensor s =
        inferprof::detail::Preprocessor(std::vector<PreprocessOp>(geo.preprocess.begin(), geo.preprocess.end() - 1))
            .run(bytes_tensor(image::encode_png(image::synth_picture(32, 18, 1), 32, 18)), image_request("w.png", 1), r,
                 -1);
    CHECK((s.sizes().vec() == std::vector<std::int64_t>{1, 3, 8, 14}));
    CHECK((s.scalar_type() == at::kByte));
    // Crop offsets are Python's round((extent - crop) / 2): 14 - 2 = 12 -> 6; of 9 - 2 = 7 -> round(3.5) = 4.
    Profile crop = parse_profile("[[preprocess]]\nop = \"center_crop\"\nsize = [1, 2]\n", "crop.toml");
    inferprof::detail::Preprocessor cp(crop.preprocess);
    TraceRequest plain;
    at::Tensor row = at::arange(9, at::kFloat).view({1, 1, 1, 9});
    CHECK(cp.run(row, plain, r, -1).flatten()[0].item<float>() == 4.0f);
    at::Tensor row7 = at::arange(7, at::kFloat).view({1, 1, 1, 7});  // 7 - 2 = 5 -> round(2.5) = 2
    CHECK(cp.run(row7, plain, r, -1).flatten()[0].item<float>() == 2.0f);

    // An image input without decode says what to do.
    Profile none = parse_profile("[[preprocess]]\nop = \"to_float\"\n", "none.toml");
    const std::string expected = "request 2: preprocessing op 'to_float' cannot apply to input of shape [" +
                                 std::to_string(jpg.size()) +
                                 "]: an image input needs 'decode' as the profile's first op (e.g. --profile "
                                 "image-classification-jpeg)";
    CHECK_THROWS_WITH(
        inferprof::detail::Preprocessor(none.preprocess).run(bytes_tensor(jpg), image_request("x.jpg", 2), r, -1),
        expected.c_str());
  }

  TEST_CASE("resize dispatches as torchvision's Resize: Pillow's on 8-bit pixels, libtorch's on floats") {
    const std::string rgb = image::synth_picture(40, 30, 2);
    at::Tensor hwc = at::empty({1, 30, 40, 3}, at::kByte);
    std::memcpy(hwc.data_ptr(), rgb.data(), rgb.size());
    const at::Tensor pixels = hwc.permute({0, 3, 1, 2});  // as decode gives them: channels-last memory
    std::string expected(20 * 15 * 3, '\0');
    image::resample(reinterpret_cast<const std::uint8_t*>(rgb.data()), 40, 30, 3,
                    reinterpret_cast<std::uint8_t*>(expected.data()), 20, 15, image::Filter::bilinear);
    const auto resized = [&](const std::string& extra, const at::Tensor& x) {
      Profile p = parse_profile("[[preprocess]]\nop = \"resize\"\nsize = [15, 20]\n" + extra, "r.toml");
      RequestRecord r;
      return inferprof::detail::Preprocessor(p.preprocess).run(x, TraceRequest{}, r, -1);
    };
    for (const char* extra : {"", "impl = \"pil\"\n"}) {
      CAPTURE(extra);
      const at::Tensor y = resized(extra, pixels);
      REQUIRE((y.sizes().vec() == std::vector<std::int64_t>{1, 3, 15, 20}));
      CHECK((y.scalar_type() == at::kByte));
      const at::Tensor back = y.permute({0, 2, 3, 1}).contiguous();
      CHECK(std::string(static_cast<const char*>(back.data_ptr()), expected.size()) == expected);
    }
    // Floats take libtorch's path; the same pixels through it differ somewhere (rounding once, not per pass).
    const at::Tensor f = resized("", pixels.to(at::kFloat));
    CHECK((f.scalar_type() == at::kFloat));
    const at::Tensor torch_u8 = resized("impl = \"torch\"\nantialias = true\n", pixels);
    CHECK((torch_u8.sizes().vec() == std::vector<std::int64_t>{1, 3, 15, 20}));
    CHECK_THROWS_WITH(resized("impl = \"pil\"\n", pixels.to(at::kFloat)),
                      "request 0: preprocessing op 'resize' cannot apply to input of shape [1, 3, 30, 40]: impl "
                      "\"pil\" resizes 8-bit pixels, not Float (put resize before to_tensor, or set impl = \"torch\")");
    CHECK_THROWS_WITH(resized("mode = \"lanczos\"\n", pixels.to(at::kFloat)),
                      "request 0: preprocessing op 'resize' cannot apply to input of shape [1, 3, 30, 40]: mode "
                      "\"lanczos\" is Pillow's and needs 8-bit pixels (put resize before to_tensor)");
    CHECK_THROWS_WITH(resized("", at::zeros({1, 3, 0, 5}, at::kByte)),
                      "request 0: preprocessing op 'resize' cannot apply to input of shape [1, 3, 0, 5]: an empty "
                      "image has nothing to resize");
    // A thin strip resized by its shorter side would be billions of pixels: refused before allocating.
    Profile thin = parse_profile("[[preprocess]]\nop = \"resize\"\nsize = 4096\n", "t.toml");
    RequestRecord r;
    CHECK_THROWS_WITH(inferprof::detail::Preprocessor(thin.preprocess)
                          .run(at::zeros({1, 3, 1, 100000}, at::kByte), TraceRequest{}, r, -1),
                      "request 0: preprocessing op 'resize' cannot apply to input of shape [1, 3, 1, 100000]: the "
                      "resized image would be 4096x409600000, over 89478485 pixels");
  }

  TEST_CASE("image-classification-jpeg matches PIL + torchvision (skipped without them)") {
    const std::string script = INFERPROF_TEST_REFERENCE_SCRIPT;
    if (std::system("/usr/bin/python3 -c 'import PIL, torchvision, numpy' >/dev/null 2>&1") != 0) {
      MESSAGE(
          "skipped: /usr/bin/python3 lacks PIL, numpy or torchvision (apt-get install python3-pil "
          "python3-torchvision)");
      return;
    }
    TempDir dir;
    Profile p = load_profile(std::string(INFERPROF_TEST_PROFILES_DIR) + "/image-classification-jpeg.toml");
    inferprof::detail::Preprocessor pre(p.preprocess);
    struct Case {
      std::string name;
      std::uint32_t w, h;
      bool png;
    };
    const std::vector<Case> cases = {Case{"land.jpg", 320, 240, false}, Case{"tall.png", 231, 347, true},
                                     Case{"hd.jpg", 1920, 1080, false}, Case{"one.jpg", 1, 1, false}};
    // One python run for all (importing torch takes seconds).
    std::string cmd = "/usr/bin/python3 " + script;
    std::vector<std::string> encoded;
    for (const Case& c : cases) {
      const std::string rgb = image::synth_picture(c.w, c.h, 11);
      encoded.push_back(c.png ? image::encode_png(rgb, c.w, c.h) : image::encode_jpeg(rgb, c.w, c.h, 90));
      cmd +=
          " " + dir.write(c.name, encoded.back()) + " " + dir.file(c.name + ".rgb") + " " + dir.file(c.name + ".f32");
    }
    REQUIRE(std::system((cmd + " >/dev/null").c_str()) == 0);
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      const std::string& bytes = encoded[i];
      const std::string path = dir.file(c.name);
      CAPTURE(c.name);
      // Decoding: the same libjpeg-turbo / libpng underneath, so the same pixels.
      CHECK(decode(bytes).rgb == slurp(dir.file(c.name + ".rgb")));
      RequestRecord r;
      at::Tensor ours = pre.run(bytes_tensor(bytes), image_request(path, 1), r, -1);
      const std::string ref_bytes = slurp(dir.file(c.name + ".f32"));
      REQUIRE(ref_bytes.size() == 3u * 224 * 224 * 4);
      at::Tensor ref = at::from_blob(const_cast<char*>(ref_bytes.data()), {1, 3, 224, 224}, at::kFloat);
      const at::Tensor diff = (ours - ref).abs();
      const double max_diff = diff.max().item<double>(), mean_diff = diff.mean().item<double>();
      MESSAGE(c.name << ": max |ours - torchvision| " << max_diff << ", mean " << mean_diff);
      // Pillow's resize on the same decoded bytes, then the same float32
      // operations torchvision does (divide by 255, subtract, divide): equal.
      CHECK(max_diff <= 1e-6);
      CHECK(mean_diff <= 1e-7);
    }
  }
}

TEST_SUITE("png conversions as PIL's convert('RGB')") {
  // Each expected row is what Pillow 9.4's Image.open(f).convert('RGB') gives
  // for the same bytes (checked by hand with Debian's python3-pil).
  TEST_CASE("alpha is dropped, not composited, 16-bit keeps the high byte, palette and grey expand") {
    struct Case {
      std::string name;
      std::string png;
      std::string rgb;
    };
    const std::vector<Case> cases = {
        {"RGBA 8-bit", png_of(3, 1, 8, 6, {bytes({200, 100, 50, 0, 10, 20, 30, 128, 255, 0, 255, 255})}),
         bytes({200, 100, 50, 10, 20, 30, 255, 0, 255})},
        {"LA 8-bit", png_of(3, 1, 8, 4, {bytes({200, 0, 10, 128, 77, 255})}),
         bytes({200, 200, 200, 10, 10, 10, 77, 77, 77})},
        {"RGB 16-bit",
         png_of(4, 1, 16, 2, {be16({2570, 25700, 300, 65535, 0, 32896, 1, 256, 511, 40000, 50000, 60000})}),
         bytes({10, 100, 1, 255, 0, 128, 0, 1, 1, 156, 195, 234})},
        {"RGBA 16-bit",
         png_of(4, 1, 16, 6,
                {be16({2570, 25700, 300, 0, 65535, 0, 32896, 30000, 1, 256, 511, 65535, 40000, 50000, 60000, 100})}),
         bytes({10, 100, 1, 255, 0, 128, 0, 1, 1, 156, 195, 234})},
        // Pillow's convert('RGB') of 16-bit grey (mode "I") saturates above 255; the high byte is kept here.
        {"grey 16-bit", png_of(4, 1, 16, 0, {be16({2570, 25700, 300, 65535})}),
         bytes({10, 10, 10, 100, 100, 100, 1, 1, 1, 255, 255, 255})},
        {"palette with a transparent entry",
         png_of(3, 1, 8, 3, {bytes({0, 1, 2})}, bytes({255, 0, 0, 0, 255, 0, 0, 0, 255}), bytes({255, 0, 255})),
         bytes({255, 0, 0, 0, 255, 0, 0, 0, 255})},
        {"grey 2-bit", png_of(4, 1, 2, 0, {bytes({0x1B})}), bytes({0, 0, 0, 85, 85, 85, 170, 170, 170, 255, 255, 255})},
    };
    for (const Case& c : cases) {
      CAPTURE(c.name);
      const Pixels p = decode(c.png);
      CHECK(p.rgb == c.rgb);
    }
  }

  TEST_CASE("the same RGBA file gives the same pixels whatever the buffer held") {
    const std::string png = png_of(2, 1, 8, 6, {bytes({200, 100, 50, 0, 10, 20, 30, 7})});
    for (int fill : {0, 0x55, 0xFF}) {
      CAPTURE(fill);
      std::string out;
      image::decode_rgb(reinterpret_cast<const std::uint8_t*>(png.data()), png.size(), image::kDefaultMaxPixels,
                        [&](const image::Header& h) {
                          out.assign(static_cast<std::size_t>(h.width) * h.height * 3, static_cast<char>(fill));
                          return reinterpret_cast<std::uint8_t*>(out.data());
                        });
      CHECK(out == bytes({200, 100, 50, 10, 20, 30}));
    }
  }

  TEST_CASE("a truncated PNG is an error naming libpng's reason") {
    const std::string png = png_of(64, 64, 8, 2, std::vector<std::string>(64, std::string(64 * 3, '\x40')));
    const std::string cut = png.substr(0, png.size() / 2);
    CHECK(decode_error(cut).find("PNG") != std::string::npos);
  }

  TEST_CASE("CMYK and YCCK JPEGs convert as PIL converts them") {
    // Stored (Adobe, inverted) C=255-40, M=255-200, Y=255-0, K=255-30: PIL reads
    // C=40, M=200, Y=0, K=30, and gives (255 - K) * (255 - X) / 255 per channel:
    // R = 225 * 215 / 255 = 189.7 -> 190 (its rounding), G = 225 * 55 / 255 = 48.5 -> 49, B = 225.
    const std::array<std::uint8_t, 4> stored = {215, 55, 255, 225};
    for (J_COLOR_SPACE space : {JCS_CMYK, JCS_YCCK}) {
      CAPTURE(static_cast<int>(space));
      const Pixels p = decode(cmyk_jpeg(16, 8, stored, space));
      REQUIRE(p.rgb.size() == 16u * 8 * 3);
      for (std::size_t i = 0; i < p.rgb.size(); i += 3) {
        // Quality 100 still rounds through the DCT (and YCCK's colour transform): a level either way.
        CHECK(std::abs(static_cast<std::uint8_t>(p.rgb[i]) - 190) <= 1);
        CHECK(std::abs(static_cast<std::uint8_t>(p.rgb[i + 1]) - 49) <= 1);
        CHECK(std::abs(static_cast<std::uint8_t>(p.rgb[i + 2]) - 225) <= 1);
      }
    }
  }

  TEST_CASE("CMYK JPEGs as Pillow writes them decode to Pillow's convert('RGB') exactly (skipped without PIL)") {
    if (std::system("/usr/bin/python3 -c 'import PIL' >/dev/null 2>&1") != 0) {
      MESSAGE("skipped: /usr/bin/python3 lacks PIL (apt-get install python3-pil)");
      return;
    }
    TempDir dir;
    // Random CMYK pixels (the worst case for the DCT), two qualities, with and without chroma subsampling.
    const std::string script = dir.write("cmyk.py", R"(import random, sys
from PIL import Image
random.seed(7)
for i, (q, sub) in enumerate([(90, 0), (50, 2)]):
    img = Image.frombytes("CMYK", (97, 61), bytes(random.randrange(256) for _ in range(97 * 61 * 4)))
    img.save(f"{sys.argv[1]}/{i}.jpg", quality=q, subsampling=sub)
    open(f"{sys.argv[1]}/{i}.rgb", "wb").write(Image.open(f"{sys.argv[1]}/{i}.jpg").convert("RGB").tobytes())
)");
    REQUIRE(std::system(("/usr/bin/python3 " + script + " " + dir.str()).c_str()) == 0);
    for (const char* i : {"0", "1"}) {
      CAPTURE(i);
      const Pixels p = decode(slurp(dir.file(std::string(i) + ".jpg")));
      CHECK(p.rgb == slurp(dir.file(std::string(i) + ".rgb")));
    }
  }

  TEST_CASE("WebP (lossy, lossless, with alpha) decodes to Pillow's convert('RGB') exactly (skipped without PIL)") {
    if (std::system(
            "/usr/bin/python3 -c 'from PIL import features; assert features.check(\"webp\")' >/dev/null 2>&1") != 0) {
      MESSAGE("skipped: /usr/bin/python3 lacks PIL with WebP (apt-get install python3-pil)");
      return;
    }
    TempDir dir;
    const std::string script = dir.write("webp.py", R"(import random, sys
from PIL import Image
random.seed(5)
w, h = 61, 37
for i, (mode, lossless) in enumerate([("RGB", False), ("RGB", True), ("RGBA", False), ("RGBA", True)]):
    img = Image.frombytes(mode, (w, h), bytes(random.randrange(256) for _ in range(w * h * len(mode))))
    img.save(f"{sys.argv[1]}/{i}.webp", lossless=lossless, quality=80)
    open(f"{sys.argv[1]}/{i}.rgb", "wb").write(Image.open(f"{sys.argv[1]}/{i}.webp").convert("RGB").tobytes())
)");
    REQUIRE(std::system(("/usr/bin/python3 " + script + " " + dir.str()).c_str()) == 0);
    for (const char* i : {"0", "1", "2", "3"}) {
      CAPTURE(i);
      const std::string webp = slurp(dir.file(std::string(i) + ".webp"));
      const Pixels p = decode(webp);
      CHECK(p.header.format == image::Format::webp);
      CHECK(p.rgb == slurp(dir.file(std::string(i) + ".rgb")));
      // A truncated file is an error, not a partial picture.
      CHECK(decode_error(webp.substr(0, webp.size() / 2)).find("WebP") != std::string::npos);
    }
  }
}
