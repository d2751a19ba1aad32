// Decode + resize of a 1080p and a 4K JPEG through the pipeline's own ops
// (libjpeg-turbo, then libtorch's antialiased bilinear interpolate to a
// shorter side of 256, as image-classification-jpeg does), side by side with
// PIL on the same files when /usr/bin/python3 has it (bench/pil_decode_resize.py).
// One intra-op thread: PIL decodes and resizes on one core.
//
//   build/bench_image [RUNS]          (default 15; prints min and median)
#include <ATen/Parallel.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "image/image.hpp"
#include "inferprof/profile.hpp"
#include "pipeline/torch_detail.hpp"
#include "temp_dir.hpp"

using namespace inferprof;

namespace {

struct Stats {
  double min_ms, median_ms;
};

Stats stats(std::vector<double> ms) {
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::max(3, std::atoi(argv[1])) : 15;
  at::set_num_threads(1);
  testing::TempDir dir;
  const Profile decode_only = parse_profile("[[preprocess]]\nop = \"decode\"\n", "decode.toml");
  const Profile decode_resize = parse_profile(
      "[[preprocess]]\nop = \"decode\"\n[[preprocess]]\nop = \"resize\"\nsize = 256\nmode = \"bilinear\"\n"
      "antialias = true\n",
      "decode_resize.toml");
  inferprof::detail::Preprocessor dec(decode_only.preprocess), dec_rs(decode_resize.preprocess);
  std::printf("%-10s %9s %22s %22s %26s\n", "image", "JPEG KB", "decode ms (min/med)", "decode+resize ms",
              "decode+resize MP/s (min/med)");
  std::vector<std::string> files;
  for (auto [w, h] : {std::pair<std::uint32_t, std::uint32_t>{1920, 1080}, {3840, 2160}}) {
    const std::string jpg = image::encode_jpeg(image::synth_picture(w, h, 1), w, h, 90);
    const std::string path = dir.write(fmt::format("{}x{}.jpg", w, h), jpg);
    files.push_back(path);
    at::Tensor bytes = at::empty({static_cast<std::int64_t>(jpg.size())}, at::kByte);
    std::memcpy(bytes.data_ptr(), jpg.data(), jpg.size());
    TraceRequest req;
    req.input.kind = InputSpec::Kind::image;
    req.input.file = path;
    std::vector<double> d_ms, dr_ms;
    for (int i = 0; i < runs + 1; ++i) {  // the first run warms allocators up: not counted
      RequestRecord r1, r2;
      Nanos t0 = now_ns();
      at::Tensor a = dec.run(bytes, req, r1, -1);
      Nanos t1 = now_ns();
      at::Tensor b = dec_rs.run(bytes, req, r2, -1);
      Nanos t2 = now_ns();
      if (i == 0) continue;
      d_ms.push_back(static_cast<double>(t1 - t0) / 1e6);
      dr_ms.push_back(static_cast<double>(t2 - t1) / 1e6);
    }
    const Stats d = stats(d_ms), dr = stats(dr_ms);
    const double mp = static_cast<double>(w) * h / 1e6;
    std::printf("%-10s %9zu %10.2f / %-9.2f %10.2f / %-9.2f %12.1f / %-11.1f\n", fmt::format("{}x{}", w, h).c_str(),
                jpg.size() / 1024, d.min_ms, d.median_ms, dr.min_ms, dr.median_ms, mp / (dr.min_ms / 1e3),
                mp / (dr.median_ms / 1e3));
  }
  std::fflush(stdout);
  std::string cmd = fmt::format("/usr/bin/python3 {} {}", INFERPROF_BENCH_PIL_SCRIPT, runs);
  for (const auto& f : files)
    cmd += " " + f;
  if (std::system(cmd.c_str()) != 0)
    std::printf("PIL: not measured (/usr/bin/python3 lacks PIL: apt-get install python3-pil)\n");
  return 0;
}
