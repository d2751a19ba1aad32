// image::resample against hand-computed weights and, byte for byte, against
// Pillow's Image.resize (through /usr/bin/python3; skipped without PIL).
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "image/image.hpp"
#include "image/resample.hpp"
#include "temp_dir.hpp"

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

const std::vector<std::pair<image::Filter, const char*>> kFilters = {
    {image::Filter::nearest, "nearest"}, {image::Filter::box, "box"},         {image::Filter::bilinear, "bilinear"},
    {image::Filter::hamming, "hamming"}, {image::Filter::bicubic, "bicubic"}, {image::Filter::lanczos, "lanczos"}};

std::string resized(const std::string& in, std::uint32_t w, std::uint32_t h, std::uint32_t c, std::uint32_t ow,
                    std::uint32_t oh, image::Filter f) {
  std::string out(static_cast<std::size_t>(ow) * oh * c, '\x55');
  image::resample(reinterpret_cast<const std::uint8_t*>(in.data()), w, h, c,
                  reinterpret_cast<std::uint8_t*>(out.data()), ow, oh, f);
  return out;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Channel c of the synthetic picture, or its first channel repeated.
std::string channels_of(const std::string& rgb, std::uint32_t c) {
  if (c == 3) return rgb;
  std::string out;
  for (std::size_t p = 0; p < rgb.size(); p += 3)
    for (std::uint32_t k = 0; k < c; ++k)
      out += rgb[p + (k % 3)];
  return out;
}

}  // namespace

TEST_SUITE("resample as Pillow") {
  TEST_CASE("hand-computed: 4 pixels to 2, bilinear stretched over two inputs each side") {
    // Output 0 centres on input 1.0 with radius 2: weights 0.75, 0.75, 0.25 over
    // inputs 0..2, normalised to 3/7, 3/7, 1/7: 70*3/7 + 140/7 = 50. Output 1:
    // 1/7, 3/7, 3/7 over inputs 1..3: 10 + 60 + 90 = 160.
    const std::string in = {0, 70, static_cast<char>(140), static_cast<char>(210)};
    const std::string out = resized(in, 4, 1, 1, 2, 1, image::Filter::bilinear);
    CHECK(static_cast<int>(static_cast<std::uint8_t>(out[0])) == 50);
    CHECK(static_cast<int>(static_cast<std::uint8_t>(out[1])) == 160);
    // Nearest picks the pixel under each output centre: 1.0 -> 1, 3.0 -> 3.
    const std::string n = resized(in, 4, 1, 1, 2, 1, image::Filter::nearest);
    CHECK(n == std::string{70, static_cast<char>(210)});
  }

  TEST_CASE("a flat picture stays flat and an equal size is a copy, for every filter") {
    const std::string flat(37 * 23 * 3, '\x7b');
    for (const auto& [f, name] : kFilters) {
      CAPTURE(name);
      CHECK(resized(flat, 37, 23, 3, 11, 29, f) == std::string(11 * 29 * 3, '\x7b'));
      CHECK(resized(flat, 37, 23, 3, 80, 5, f) == std::string(80 * 5 * 3, '\x7b'));
      const std::string pic = image::synth_picture(9, 7, 3);
      CHECK(resized(pic, 9, 7, 3, 9, 7, f) == pic);
    }
  }

  TEST_CASE("negative lobes clip to 0 and 255 instead of wrapping") {
    // A hard edge: bicubic and lanczos overshoot on both sides of it.
    std::string edge;
    for (int x = 0; x < 16; ++x)
      edge += x < 8 ? '\0' : '\xff';
    for (auto f : {image::Filter::bicubic, image::Filter::lanczos}) {
      const std::string up = resized(edge, 16, 1, 1, 53, 1, f);
      CHECK(static_cast<std::uint8_t>(up.front()) == 0);
      CHECK(static_cast<std::uint8_t>(up.back()) == 255);
      // Ringing is real (Pillow rings too), but an overshoot wrapped around would put a
      // bright pixel on the dark side or a dark one on the bright side.
      for (std::size_t i = 0; i < up.size() * 2 / 5; ++i)
        CHECK(static_cast<std::uint8_t>(up[i]) < 64);
      for (std::size_t i = up.size() * 3 / 5; i < up.size(); ++i)
        CHECK(static_cast<std::uint8_t>(up[i]) > 191);
    }
  }

  TEST_CASE("equals Pillow's Image.resize byte for byte (skipped without PIL)") {
    if (std::system("/usr/bin/python3 -c 'import PIL' >/dev/null 2>&1") != 0) {
      MESSAGE("skipped: /usr/bin/python3 lacks PIL (apt-get install python3-pil)");
      return;
    }
    struct Case {
      std::uint32_t w, h, c, ow, oh;
    };
    // Shrinking by whole and fractional factors (the antialiased path), growing,
    // one axis only, a 1-pixel side, and the ImageNet Resize(256) of a 1080p frame.
    const std::vector<Case> cases = {{64, 48, 3, 32, 24},    {97, 61, 3, 40, 17}, {31, 17, 3, 100, 80},
                                     {50, 40, 3, 50, 13},    {50, 40, 3, 7, 40},  {1, 9, 3, 5, 3},
                                     {45, 33, 1, 20, 50},    {45, 33, 4, 16, 16}, {1920, 1080, 3, 455, 256},
                                     {300, 200, 3, 299, 201}};
    TempDir dir;
    std::string cmd = "/usr/bin/python3 " + std::string(INFERPROF_TEST_RESIZE_REFERENCE);
    std::vector<std::string> inputs, names;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& k = cases[i];
      inputs.push_back(channels_of(image::synth_picture(k.w, k.h, 40 + i), k.c));
      const std::string in = dir.write("in" + std::to_string(i), inputs.back());
      for (const auto& [f, name] : kFilters) {
        const std::string out = "out" + std::to_string(i) + name;
        names.push_back(out);
        cmd += " " + in + " " + std::to_string(k.w) + "x" + std::to_string(k.h) + "x" + std::to_string(k.c) + " " +
               std::to_string(k.ow) + "x" + std::to_string(k.oh) + " " + name + " " + dir.file(out);
      }
    }
    REQUIRE(std::system((cmd + " >/dev/null").c_str()) == 0);
    std::size_t n = 0;
    for (std::size_t i = 0; i < cases.size(); ++i) {
      const Case& k = cases[i];
      for (const auto& [f, name] : kFilters) {
        CAPTURE(name);
        CAPTURE(k.w);
        CAPTURE(k.h);
        CAPTURE(k.c);
        CAPTURE(k.ow);
        CAPTURE(k.oh);
        const std::string ours = resized(inputs[i], k.w, k.h, k.c, k.ow, k.oh, f);
        const std::string pil = read_all(dir.file(names[n++]));
        REQUIRE(pil.size() == ours.size());
        std::size_t differ = 0;
        for (std::size_t b = 0; b < ours.size(); ++b)
          differ += ours[b] != pil[b];
        CHECK(differ == 0);
      }
    }
  }
}
