// End-to-end: image requests (JPEG and PNG files, base64 bytes) through
// `inferprof run --profile image-classification-jpeg`, and the bad inputs:
// one line naming the trace line, exit 2, no reports.
#include <doctest/doctest.h>

#include "cli_harness.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

struct ImageFixture {
  TempDir dir;
  std::string model = dir.file("resnet18.pt");
  std::string imgs = dir.file("imgs");
  ImageFixture() {
    auto g = run_cli({"gen-images", "--out", imgs, "--sizes", "300x200,64x48,1x1", "--formats", "jpeg,png"});
    if (g.code != 0) throw std::runtime_error("gen-images failed: " + g.err);
    auto m = run_cli({"gen-model", "--arch", "resnet18", "-o", model});
    if (m.code != 0) throw std::runtime_error("gen-model failed: " + m.err);
  }
  std::string bytes(const std::string& name) const { return slurp(fs::path(imgs) / name); }
};
ImageFixture& images() {
  static ImageFixture f;
  return f;
}

std::string base64_of(const std::string& path) {
  TempDir tmp;
  const std::string out = tmp.file("b64");
  const std::string cmd = "base64 -w0 " + shell_quote(path) + " > " + shell_quote(out);
  if (std::system(cmd.c_str()) != 0) throw std::runtime_error("base64 failed");
  return slurp(out);
}

CliResult run_images(const std::string& trace, const std::string& out_dir) {
  return run_cli({"run", images().model, "--trace", trace, "--profile", "image-classification-jpeg", "--warmup", "1",
                  "--out", out_dir, "--no-progress"},
                 std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
}

}  // namespace

TEST_SUITE("e2e images") {
  TEST_CASE("gen-images writes JPEG and PNG pictures at the sizes asked") {
    auto& f = images();
    for (const char* name : {"300x200-0.jpg", "300x200-0.png", "64x48-0.jpg", "64x48-0.png", "1x1-0.jpg", "1x1-0.png"})
      CHECK_MESSAGE(fs::file_size(fs::path(f.imgs) / name) > 0, name);
    CHECK(f.bytes("300x200-0.jpg").substr(0, 3) == "\xFF\xD8\xFF");
    CHECK(f.bytes("300x200-0.png").substr(1, 3) == "PNG");
    auto bad = run_cli({"gen-images", "--out", f.dir.file("x"), "--sizes", "10x"});
    CHECK(bad.code == 2);
    CHECK(bad.err.find("--sizes: '10x': expected WIDTHxHEIGHT") != std::string::npos);
  }

  TEST_CASE("JPEG, PNG, 1x1 and base64 requests run through the image profile, each op its own span") {
    auto& f = images();
    TempDir dir;
    const std::string trace =
        dir.write("t.jsonl", fmt::format("{{\"id\": 1, \"input\": {{\"image\": \"{0}/300x200-0.jpg\"}}}}\n"
                                         "{{\"id\": 2, \"input\": {{\"image\": \"{0}/64x48-0.png\"}}}}\n"
                                         "{{\"id\": 3, \"input\": {{\"image\": \"{0}/1x1-0.jpg\"}}}}\n"
                                         "{{\"id\": 4, \"input\": {{\"image_base64\": \"{1}\"}}}}\n"
                                         "{{\"id\": 5, \"input\": {{\"image\": \"{0}/1x1-0.png\"}}}}\n",
                                         f.imgs, base64_of(fs::path(f.imgs) / "64x48-0.png")));
    auto r = run_images(trace, dir.file("r"));
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string folded = slurp(fs::path(dir.file("r")) / "stacks.folded");
    for (const char* op : {"decode", "resize", "center_crop", "to_tensor", "normalize"})
      CHECK_MESSAGE(folded.find(std::string("preprocess;") + op + " ") != std::string::npos, op << "\n" << folded);
    simdjson::dom::parser parser;
    simdjson::dom::element summary;
    REQUIRE(parser.parse(slurp(fs::path(dir.file("r")) / "summary.json")).get(summary) == simdjson::SUCCESS);
    CHECK(json_number(summary["requests"]) == 5);
  }

  TEST_CASE("each preprocessing op is a part of preprocess in every report, with CPU time, and diff gates on it") {
    auto& f = images();
    TempDir dir;
    const std::string trace =
        dir.write("t.jsonl", fmt::format("{{\"id\": 1, \"input\": {{\"image\": \"{0}/300x200-0.jpg\"}}}}\n"
                                         "{{\"id\": 2, \"input\": {{\"image\": \"{0}/64x48-0.png\"}}}}\n",
                                         f.imgs));
    const fs::path out = dir.file("r");
    auto r = run_cli({"run", f.model, "--trace", trace, "--profile", "image-classification-jpeg", "--warmup", "1",
                      "--cpu-sample", "1", "--out", out.string(), "--no-progress"},
                     std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    // The table: each op indented under preprocess, in the profile's order.
    const auto pre = r.out.find("\npreprocess ");
    REQUIRE_MESSAGE(pre != std::string::npos, r.out);
    CHECK(r.out.find("\n  decode ", pre) < r.out.find("\n  resize ", pre));
    CHECK(r.out.find("\n  normalize ", pre) < r.out.find("\nh2d ", pre));

    simdjson::dom::parser parser;
    simdjson::dom::element summary;
    REQUIRE(parser.parse(slurp(out / "summary.json")).get(summary) == simdjson::SUCCESS);
    double parts = 0;
    for (const char* op : {"decode", "resize", "center_crop", "to_tensor", "normalize"}) {
      simdjson::dom::element e = summary["stages"]["preprocess"]["ops"][op];
      CHECK_MESSAGE(json_number(e["count"]) == 2, op);
      CHECK_MESSAGE(json_number(e["cpu_mean_us"]) > 0, op);
      parts += json_number(e["mean_us"]);
    }
    // The parts lie inside their stage.
    CHECK(parts <= json_number(summary["stages"]["preprocess"]["mean_us"]));
    CHECK(parts > 0.5 * json_number(summary["stages"]["preprocess"]["mean_us"]));
    const std::string stages = slurp(out / "stages.csv");
    CHECK(stages.find("\npreprocess.resize,2,") != std::string::npos);

    // requests.csv: the ops' columns, and what decode read: the file's bytes, width x height.
    const std::string csv = slurp(out / "requests.csv");
    const std::string header = csv.substr(0, csv.find('\n'));
    CHECK(header.find(",preprocess.decode_us,preprocess.resize_us,") != std::string::npos);
    CHECK(header.find(",preprocess.normalize_cpu_us,image_bytes,image_pixels") != std::string::npos);
    // (then batch 1 and its batch_wait_us 0: no batcher)
    const std::string jpeg_row = fmt::format(",{},{},1,0.000\n", f.bytes("300x200-0.jpg").size(), 300 * 200);
    const std::string png_row = fmt::format(",{},{},1,0.000\n", f.bytes("64x48-0.png").size(), 64 * 48);
    CHECK_MESSAGE(csv.find(jpeg_row) != std::string::npos, csv);
    CHECK_MESSAGE(csv.find(png_row) != std::string::npos, csv);

    // diff gates on an op; one the runs lack is named with those they have.
    auto same = run_cli({"diff", out.string(), out.string(), "--max-regression", "preprocess.resize.cpu.p50=5%"});
    CHECK_MESSAGE(same.code == 0, same.err);
    CHECK(same.out.find("preprocess.resize") != std::string::npos);
    auto unknown = run_cli({"diff", out.string(), out.string(), "--max-regression", "preprocess.tokenize.mean=5%"});
    CHECK(unknown.code == 2);
    CHECK_MESSAGE(unknown.err.find("not every run has preprocess.tokenize (they have preprocess.decode, "
                                   "preprocess.resize, preprocess.center_crop, preprocess.to_tensor, "
                                   "preprocess.normalize)") != std::string::npos,
                  unknown.err);

    // compare --gate reads the op from each configuration's paired requests; an op a profile lacks is refused
    // before any replay.
    const fs::path cmp = dir.file("c");
    auto gated = run_cli(
        {"compare", f.model, "--trace", trace, "--profile", "image-classification-jpeg", "--caches", "none", "--caches",
         "none", "--warmup", "1", "--gate", "preprocess.resize.cpu.mean=400%", "--out", cmp.string(), "--no-progress"},
        std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    REQUIRE_MESSAGE(gated.code == 0, gated.err);
    simdjson::dom::element compare;
    REQUIRE(parser.parse(slurp(cmp / "compare.json")).get(compare) == simdjson::SUCCESS);
    std::string_view stage;
    REQUIRE(compare["gates"].at(0)["stage"].get(stage) == simdjson::SUCCESS);
    CHECK(stage == "preprocess.resize");
    CHECK(json_number(compare["gates"].at(0)["base_us"]) > 0);
    auto lacking = run_cli({"compare", f.model, "--trace", trace, "--profile", "image-classification-jpeg", "--caches",
                            "none", "--caches", "none", "--gate", "preprocess.tokenize.mean=5%", "--no-progress"},
                           std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    CHECK(lacking.code == 2);
    CHECK_MESSAGE(lacking.err.find("none has no preprocessing op 'preprocess.tokenize'") != std::string::npos,
                  lacking.err);
  }

  TEST_CASE("a relative image path resolves against the trace's folder") {
    auto& f = images();
    TempDir dir;
    dir.write("sub/pics/a.jpg", f.bytes("64x48-0.jpg"));
    const std::string trace = dir.write("sub/t.jsonl", "{\"input\": {\"image\": \"pics/a.jpg\"}}\n");
    auto r = run_images(trace, dir.file("r"));
    CHECK_MESSAGE(r.code == 0, r.err);
  }

  TEST_CASE("bad images: one line naming the trace line, exit 2, no reports") {
    auto& f = images();
    TempDir dir;
    const std::string jpg = f.bytes("300x200-0.jpg");
    const std::string png = f.bytes("300x200-0.png");
    std::string bad_crc = png;
    const auto idat = bad_crc.find("IDAT");
    REQUIRE(idat != std::string::npos);
    // The chunk's stored CRC, after its data (the length precedes "IDAT", big-endian).
    std::size_t len = 0;
    for (int i = 4; i >= 1; --i)
      len = (len << 8) | static_cast<std::uint8_t>(bad_crc[idat - static_cast<std::size_t>(i)]);
    bad_crc[idat + 4 + len] = static_cast<char>(bad_crc[idat + 4 + len] ^ 0x55);
    // A JPEG whose frame header says 30000 x 30000: refused from the header.
    std::string huge = f.bytes("64x48-0.jpg");
    const auto sof = huge.find("\xFF\xC0");
    REQUIRE(sof != std::string::npos);
    for (int i : {5, 7}) {
      huge[sof + i] = static_cast<char>(30000 >> 8);
      huge[sof + i + 1] = static_cast<char>(30000 & 0xFF);
    }
    const std::string cut = dir.write("cut.jpg", jpg.substr(0, jpg.size() / 2));
    const std::string crc = dir.write("crc.png", bad_crc);
    const std::string big = dir.write("big.jpg", huge);
    const std::string text = dir.write("text.jpg", "hello");
    const std::string good = fmt::format("{{\"input\": {{\"image\": \"{}/64x48-0.jpg\"}}}}\n", f.imgs);
    struct Case {
      std::string second_line;  // the bad request, on line 2 (line 1 is good)
      std::string message;      // after "TRACE:2: "
    };
    const std::vector<Case> cases = {
        {"{\"input\": {\"image\": \"missing.jpg\"}}",
         fmt::format("image '{}': cannot open (No such file or directory)", dir.file("missing.jpg"))},
        {"{\"input\": {\"image\": \"cut.jpg\"}}",
         fmt::format("image '{}': corrupt or truncated JPEG (libjpeg: Premature end of JPEG file)", cut)},
        {"{\"input\": {\"image\": \"crc.png\"}}",
         fmt::format("image '{}': corrupt or truncated PNG (libpng: IDAT: CRC error)", crc)},
        {"{\"input\": {\"image\": \"big.jpg\"}}",
         fmt::format("image '{}': 30000x30000 JPEG is 900000000 pixels, over the limit of 89478485 (checked before "
                     "decoding; the decode op's max_pixels sets it)",
                     big)},
        {"{\"input\": {\"image\": \"text.jpg\"}}",
         fmt::format("image '{}': not a JPEG, PNG or WebP (starts with bytes 68656c6c)", text)},
        {"{\"input\": {\"image_base64\": \"QUJDR\"}}",
         "input.image_base64: not base64: 5 characters, not a multiple of 4 (padded base64 expected)"},
    };
    int n = 0;
    for (const Case& c : cases) {
      CAPTURE(c.second_line);
      const std::string trace = dir.write(fmt::format("t{}.jsonl", n), good + c.second_line + "\n");
      const std::string out = dir.file(fmt::format("r{}", n++));
      auto r = run_images(trace, out);
      CHECK(r.code == 2);
      CHECK(r.err == fmt::format("inferprof: error: {}:2: {}\n", trace, c.message));
      CHECK_MESSAGE(dir_is_empty_or_missing(out), "report files were left in " << out);
    }
    // The first request fails during warm-up: the same message.
    const std::string first = dir.write("first.jsonl", "{\"input\": {\"image\": \"cut.jpg\"}}\n" + good);
    auto r = run_images(first, dir.file("rf"));
    CHECK(r.code == 2);
    CHECK(r.err == fmt::format("inferprof: error: {}:1: image '{}': corrupt or truncated JPEG (libjpeg: Premature "
                               "end of JPEG file)\n",
                               first, cut));
    CHECK(dir_is_empty_or_missing(dir.file("rf")));
  }

  TEST_CASE("an image request under a profile without decode says what to use") {
    auto& f = images();
    TempDir dir;
    const std::string trace =
        dir.write("t.jsonl", fmt::format("{{\"input\": {{\"image\": \"{}/64x48-0.jpg\"}}}}\n", f.imgs));
    auto r = run_cli({"run", f.model, "--trace", trace, "--warmup", "0", "--out", dir.file("r"), "--no-progress"});
    CHECK(r.code == 3);
    CHECK(r.err.find("an image input needs 'decode' as the profile's first op (e.g. --profile "
                     "image-classification-jpeg)") != std::string::npos);
    CHECK(count_lines(r.err) == 1);
  }

  TEST_CASE("--dump-inputs and --dump-outputs: each distinct key's tensors as .npy, equal to torchvision's") {
    auto& f = images();
    TempDir dir;
    const std::string trace =
        dir.write("t.jsonl", fmt::format("{{\"id\": 1, \"input\": {{\"image\": \"{0}/300x200-0.jpg\"}}}}\n"
                                         "{{\"id\": 2, \"input\": {{\"image\": \"{0}/64x48-0.png\"}}}}\n"
                                         "{{\"id\": 3, \"input\": {{\"image\": \"{0}/300x200-0.jpg\"}}}}\n"
                                         "{{\"id\": 4, \"input\": {{\"image\": \"{0}/1x1-0.jpg\"}}}}\n",
                                         f.imgs));
    const std::string dump = dir.file("dump");
    auto r = run_cli({"run", f.model, "--trace", trace, "--profile", "image-classification-jpeg", "--warmup", "1",
                      "--caches", "l1", "--dump-inputs", dump, "--dump-outputs", dump, "--no-progress"},
                     std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    REQUIRE_MESSAGE(r.code == 0, r.err);
    const std::string keys = slurp(fs::path(dump) / "keys.csv");
    CHECK(count_lines(keys) == 4);  // the header and three distinct images; request 3 repeats request 1
    CHECK(keys.rfind("folder,key,request_id,line,input,files\n000001,", 0) == 0);
    CHECK(keys.find(",1,1," + f.imgs + "/300x200-0.jpg,") != std::string::npos);
    CHECK(keys.find(",4,4," + f.imgs + "/1x1-0.jpg,") != std::string::npos);
    for (const char* folder : {"000001", "000002", "000003"}) {
      CAPTURE(folder);
      std::vector<std::string> names;
      for (const auto& e : fs::directory_iterator(fs::path(dump) / folder))
        names.push_back(e.path().filename());
      std::sort(names.begin(), names.end());
      REQUIRE(names.size() == 2);
      CHECK(names[0].rfind("input.", 0) == 0);  // named by the forward's argument
      CHECK(names[1] == "output.npy");
      const std::string in = slurp(fs::path(dump) / folder / names[0]);
      REQUIRE(in.size() > 128);
      CHECK(in.rfind(std::string("\x93NUMPY\x01\x00", 8), 0) == 0);
      const std::size_t header = 10 + static_cast<unsigned char>(in[8]) + 256u * static_cast<unsigned char>(in[9]);
      CHECK(header % 64 == 0);
      CHECK(in.substr(10, header - 10).find("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), }") ==
            0);
      CHECK(in.size() == header + 3u * 224 * 224 * 4);
      CHECK(slurp(fs::path(dump) / folder / "output.npy").find("'shape': (1, 1000)") != std::string::npos);
    }
    for (const auto& e : fs::directory_iterator(dump))  // the staging folder is gone
      CHECK(e.path().filename().string().rfind(".dump.tmp", 0) == std::string::npos);

    // docs/profiles.md's check, run as printed there, against torchvision.
    if (std::system("/usr/bin/python3 -c 'import PIL, numpy, torchvision' >/dev/null 2>&1") != 0) {
      MESSAGE("skipped the torchvision check: /usr/bin/python3 lacks PIL, numpy or torchvision");
      return;
    }
    const std::string doc = slurp(fs::path(INFERPROF_PROFILES_DIR) / ".." / "docs" / "profiles.md");
    const std::size_t marker = doc.find("<!-- check-dumped-inputs -->\n```python\n");
    REQUIRE(marker != std::string::npos);
    const std::size_t begin = doc.find('\n', doc.find("```python", marker)) + 1;
    const std::string script = dir.write("check.py", doc.substr(begin, doc.find("```", begin) - begin));
    const std::string out = dir.file("check.out");
    REQUIRE(std::system(("/usr/bin/python3 " + shell_quote(script) + " " + shell_quote(dump) + " >" + shell_quote(out) +
                         " 2>&1")
                            .c_str()) == 0);
    const std::string printed = slurp(out);
    CHECK_MESSAGE(count_lines(printed) == 3, printed);
    std::size_t zeros = 0;
    for (std::size_t at = printed.find("max |difference| 0.0\n"); at != std::string::npos;
         at = printed.find("max |difference| 0.0\n", at + 1))
      ++zeros;
    CHECK_MESSAGE(zeros == 3, printed);
  }

  TEST_CASE("the warm-up replays the median-sized input, or the key --warmup-from names, not always the first") {
    auto& f = images();
    TempDir dir;
    // The first request is the largest picture; the median of the three is the 64x48 PNG on line 2.
    const std::string trace =
        dir.write("t.jsonl", fmt::format("{{\"key\": \"big\", \"input\": {{\"image\": \"{0}/300x200-0.jpg\"}}}}\n"
                                         "{{\"key\": \"mid\", \"input\": {{\"image\": \"{0}/64x48-0.png\"}}}}\n"
                                         "{{\"key\": \"dot\", \"input\": {{\"image\": \"{0}/1x1-0.jpg\"}}}}\n",
                                         f.imgs));
    const auto warmup_of = [&](const std::vector<std::string>& extra) {
      std::vector<std::string> args = {
          "run",      f.model, "--trace",       trace,   "--profile",  "image-classification-jpeg",
          "--warmup", "2",     "--no-progress", "--out", dir.file("r")};
      args.insert(args.end(), extra.begin(), extra.end());
      auto r = run_cli(args, std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
      REQUIRE_MESSAGE(r.code == 0, r.err);
      simdjson::dom::parser parser;
      simdjson::dom::element summary;
      REQUIRE(parser.parse(slurp(fs::path(dir.file("r")) / "summary.json")).get(summary) == simdjson::SUCCESS);
      std::string_view request;
      REQUIRE(summary["run"]["warmup"]["request"].get(request) == simdjson::SUCCESS);
      CHECK(r.out.find(" · on " + std::string(request)) != std::string::npos);  // the table says it too
      return std::string(request);
    };
    CHECK(warmup_of({}).rfind("line 2 (the median input size, ", 0) == 0);
    CHECK(warmup_of({"--warmup-from", "dot"}) == "line 3 (--warmup-from dot)");
    auto missing = run_cli({"run", f.model, "--trace", trace, "--profile", "image-classification-jpeg", "--warmup-from",
                            "cat", "--no-progress", "--out", dir.file("m")},
                           std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    CHECK(missing.code == 2);
    CHECK(missing.err == "inferprof: error: --warmup-from cat: no request with that key in " + trace + "\n");
    CHECK(!fs::exists(dir.file("m") + "/summary.json"));
  }

  TEST_CASE("compare --dump-inputs dumps once, whatever the passes and configurations") {
    auto& f = images();
    TempDir dir;
    const std::string trace = dir.write("t.jsonl", fmt::format("{{\"input\": {{\"image\": \"{0}/64x48-0.png\"}}}}\n"
                                                               "{{\"input\": {{\"image\": \"{0}/1x1-0.jpg\"}}}}\n"
                                                               "{{\"input\": {{\"image\": \"{0}/64x48-0.png\"}}}}\n",
                                                               f.imgs));
    for (const char* mode : {"lockstep", "sequential"}) {
      CAPTURE(mode);
      const std::string dump = dir.file(std::string("dump-") + mode);
      auto r = run_cli({"compare",        f.model,
                        "--trace",        trace,
                        "--profile",      "image-classification-jpeg",
                        "--caches",       "none",
                        "--caches",       "l1",
                        "--repeat",       "2",
                        "--mode",         mode,
                        "--warmup",       "0",
                        "--dump-inputs",  dump,
                        "--dump-outputs", dump,
                        "--out",          dir.file(std::string("c-") + mode),
                        "--no-progress"},
                       std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
      REQUIRE_MESSAGE(r.code == 0, r.err);
      CHECK(count_lines(slurp(fs::path(dump) / "keys.csv")) == 3);
      CHECK(fs::exists(fs::path(dump) / "000002" / "input.x.npy"));
      CHECK(fs::exists(fs::path(dump) / "000002" / "output.npy"));
      CHECK(fs::exists(fs::path(dir.file(std::string("c-") + mode)) / "compare.json"));
    }
  }

  TEST_CASE("a dump of fewer keys into the same folder leaves no folder of the earlier one") {
    auto& f = images();
    TempDir dir;
    const std::string dump = dir.file("dump");
    const auto dump_trace = [&](const std::string& name, const std::vector<std::string>& pictures) {
      std::string lines;
      for (const auto& p : pictures)
        lines += fmt::format("{{\"input\": {{\"image\": \"{}/{}\"}}}}\n", f.imgs, p);
      return run_cli({"run", f.model, "--trace", dir.write(name, lines), "--profile", "image-classification-jpeg",
                      "--warmup", "0", "--dump-inputs", dump, "--no-progress"},
                     std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    };
    auto first = dump_trace("three.jsonl", {"300x200-0.jpg", "64x48-0.png", "1x1-0.jpg"});
    REQUIRE_MESSAGE(first.code == 0, first.err);
    CHECK(fs::exists(fs::path(dump) / "000003"));
    auto again = dump_trace("one.jsonl", {"1x1-0.png"});
    REQUIRE_MESSAGE(again.code == 0, again.err);
    CHECK(count_lines(slurp(fs::path(dump) / "keys.csv")) == 2);
    CHECK(fs::exists(fs::path(dump) / "000001" / "input.x.npy"));
    CHECK(!fs::exists(fs::path(dump) / "000002"));
    CHECK(!fs::exists(fs::path(dump) / "000003"));
  }

  TEST_CASE("a FIFO as an image, a .npy or a profile is refused at once instead of waiting for a writer") {
    auto& f = images();
    TempDir dir;
    REQUIRE(std::system(("mkfifo " + shell_quote(dir.file("f.jpg")) + " " + shell_quote(dir.file("f.npy")) + " " +
                         shell_quote(dir.file("p.toml")))
                            .c_str()) == 0);
    const std::string env = std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR + " timeout 120";
    const std::string image_trace = dir.write("i.jsonl", "{\"input\": {\"image\": \"f.jpg\"}}\n");
    auto r = run_cli({"run", f.model, "--trace", image_trace, "--profile", "image-classification-jpeg", "--warmup", "0",
                      "--out", dir.file("r"), "--no-progress"},
                     env);
    CHECK(r.code == 2);  // 124 when it hung until the timeout
    CHECK_MESSAGE(r.err.find("image '" + dir.file("f.jpg") + "': not a regular file") != std::string::npos, r.err);
    CHECK(count_lines(r.err) == 1);
    CHECK(!fs::exists(fs::path(dir.file("r")) / "summary.json"));
    const std::string npy_trace = dir.write("n.jsonl", "{\"input\": {\"file\": \"f.npy\"}}\n");
    auto n = run_cli({"run", f.model, "--trace", npy_trace, "--warmup", "0", "--no-progress"}, env);
    CHECK(n.code == 2);
    CHECK_MESSAGE(n.err.find("not a regular file") != std::string::npos, n.err);
    auto p = run_cli({"run", f.model, "--trace", image_trace, "--profile", dir.file("p.toml"), "--no-progress"}, env);
    CHECK(p.code == 2);
    CHECK(p.err == "inferprof: error: profile '" + dir.file("p.toml") + "': not a regular file\n");
    // The trace itself, and a tokenizer model.
    REQUIRE(std::system(
                ("mkfifo " + shell_quote(dir.file("t.jsonl")) + " " + shell_quote(dir.file("spm.model"))).c_str()) ==
            0);
    auto t = run_cli({"run", f.model, "--trace", dir.file("t.jsonl"), "--no-progress"}, env);
    CHECK(t.code == 2);
    CHECK_MESSAGE(
        t.err.find("cannot read trace '" + dir.file("t.jsonl") + "': not a regular file") != std::string::npos, t.err);
    const std::string text_profile =
        dir.write("text.toml", "[[preprocess]]\nop = \"tokenize\"\nmodel = \"spm.model\"\n");
    const std::string text_trace = dir.write("x.jsonl", "{\"input\": {\"text\": \"hello\"}}\n");
    auto k = run_cli({"run", f.model, "--trace", text_trace, "--profile", text_profile, "--no-progress"}, env);
    CHECK(k.code == 2);
    CHECK_MESSAGE(
        k.err.find("tokenize: model '" + dir.file("spm.model") + "': not a regular file") != std::string::npos, k.err);
  }

  TEST_CASE("dump folders are checked before the replay, and need one replica") {
    auto& f = images();
    TempDir dir;
    const std::string trace =
        dir.write("t.jsonl", fmt::format("{{\"input\": {{\"image\": \"{}/64x48-0.jpg\"}}}}\n", f.imgs));
    dir.write("file", "x");
    auto r = run_cli({"run", f.model, "--trace", trace, "--profile", "image-classification-jpeg", "--warmup", "0",
                      "--dump-inputs", dir.file("file"), "--out", dir.file("r"), "--no-progress"},
                     std::string("INFERPROF_PROFILES_DIR=") + INFERPROF_PROFILES_DIR);
    CHECK(r.code == 2);  // as an unusable --out
    CHECK_MESSAGE(r.err.find(dir.file("file")) != std::string::npos, r.err);
    CHECK(count_lines(r.err) == 1);
    CHECK(!fs::exists(fs::path(dir.file("r")) / "summary.json"));
    auto many = run_cli({"run", f.model, "--trace", trace, "--replicas", "2", "--dump-outputs", dir.file("d")});
    CHECK(many.code == 2);
    CHECK(many.err.find("--dump-inputs and --dump-outputs need one replica (drop --replicas)") != std::string::npos);
  }
}
