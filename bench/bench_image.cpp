// The image-classification-jpeg transform (resize shorter side 256, centre
// crop 224, to_tensor, normalize) on decoded pixels through the pipeline's own
// ops, side by side with torchvision's transform on a PIL image
// (bench/torchvision_transform.py, a child process), alternating request by
// request on the same decoded pictures: each round times ours, then theirs,
// so that load and frequency changes fall on both. Decoding (libjpeg-turbo
// in both) is timed separately. One intra-op thread on both sides.
//
//   build/bench/bench_image [ROUNDS]     (default 31; run it under
//   bench/busy_load.sh's load too: BUSY=1 bash bench/image_vs_torchvision.sh)
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

at::Tensor bytes_of(const std::string& s) {
  at::Tensor t = at::empty({static_cast<std::int64_t>(s.size())}, at::kByte);
  std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::max(5, std::atoi(argv[1])) : 31;
  at::set_num_threads(1);
  testing::TempDir dir;
  const Profile profile = load_profile(std::string(INFERPROF_BENCH_PROFILES_DIR) + "/image-classification-jpeg.toml");
  std::vector<PreprocessOp> transform_ops(profile.preprocess.begin() + 1, profile.preprocess.end());  // all but decode
  const std::vector<PreprocessOp> decode_ops(profile.preprocess.begin(), profile.preprocess.begin() + 1);
  inferprof::detail::Preprocessor decode(decode_ops), transform(transform_ops);

  const std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes = {{1920, 1080}, {3840, 2160}, {4096, 4096}};
  std::vector<std::string> files;
  std::vector<at::Tensor> pixels;
  std::vector<double> decode_ms(sizes.size());
  for (auto [w, h] : sizes) {
    const std::string jpg = image::encode_jpeg(image::synth_picture(w, h, 1), w, h, 90);
    files.push_back(dir.write(fmt::format("{}x{}.jpg", w, h), jpg));
    TraceRequest req;
    req.input.kind = InputSpec::Kind::image;
    req.input.file = files.back();
    std::vector<double> ms;
    for (int i = 0; i < 5; ++i) {
      RequestRecord r;
      const Nanos t0 = now_ns();
      pixels.push_back(decode.run(bytes_of(jpg), req, r, -1));
      ms.push_back(static_cast<double>(now_ns() - t0) / 1e6);
      if (i) pixels.pop_back();
    }
    decode_ms[files.size() - 1] = median(ms);
  }

  std::string cmd = fmt::format("/usr/bin/python3 {}", INFERPROF_BENCH_TORCHVISION_SCRIPT);
  for (const auto& f : files)
    cmd += " " + f;
  // A child with both pipes: a FIFO pair, since popen gives only one direction.
  const std::string to = dir.file("to"), from = dir.file("from");
  if (std::system(fmt::format("mkfifo {} {}", to, from).c_str()) != 0) return 1;
  if (std::system(fmt::format("{} <{} >{} &", cmd, to, from).c_str()) != 0) return 1;
  FILE* out = std::fopen(to.c_str(), "w");
  FILE* in = std::fopen(from.c_str(), "r");
  char line[64];
  if (!out || !in || !std::fgets(line, sizeof line, in) || std::string(line) != "ready\n") {
    std::printf(
        "torchvision side: not measured (/usr/bin/python3 lacks PIL or torchvision: apt-get install "
        "python3-pil python3-torchvision)\n");
    return 0;
  }
  std::printf("%-10s %10s | %16s %16s | %24s\n", "image", "decode ms", "ours ms (med)", "torchvision ms",
              "ours / torchvision: median [min, max] of rounds");
  for (std::size_t k = 0; k < sizes.size(); ++k) {
    TraceRequest req;
    req.input.kind = InputSpec::Kind::image;
    req.input.file = files[k];
    std::vector<double> ours, theirs, ratio;
    for (int i = 0; i < rounds + 1; ++i) {  // round 0 warms both up: not counted
      RequestRecord r;
      const Nanos t0 = now_ns();
      at::Tensor t = transform.run(pixels[k], req, r, -1);
      const double o = static_cast<double>(now_ns() - t0) / 1e6;
      std::fprintf(out, "%zu\n", k);
      std::fflush(out);
      if (!std::fgets(line, sizeof line, in)) return 1;
      const double p = std::atof(line);
      if (i == 0) continue;
      ours.push_back(o);
      theirs.push_back(p);
      ratio.push_back(o / p);
    }
    std::printf("%-10s %10.2f | %16.2f %16.2f | %12.3f [%.3f, %.3f]\n",
                fmt::format("{}x{}", sizes[k].first, sizes[k].second).c_str(), decode_ms[k], median(ours),
                median(theirs), median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                *std::max_element(ratio.begin(), ratio.end()));
  }
  std::fclose(out);
  std::fclose(in);
  return 0;
}
