#include <doctest/doctest.h>

#include <fstream>

#include "inferprof/error.hpp"
#include "inferprof/profile.hpp"

using namespace inferprof;

TEST_SUITE("profile") {
  TEST_CASE("the embedded default profile") {
    Profile p = load_profile("");
    CHECK(p.name == "default");
    CHECK(p.source == "<embedded default>");
    CHECK(p.model.device == "cpu");
    CHECK(p.model.threads == 1);
    CHECK(p.model.warmup == 3);
    REQUIRE(p.preprocess.size() == 1);
    CHECK(p.preprocess[0].op == PreprocessKind::to_float);
  }

  TEST_CASE("a profile name with control or bidirectional characters is refused, escaped in the message") {
    for (const std::string name : {"evil\\u001b[2J", "a\\u202etxt", "two\\nlines"}) {
      try {
        (void)parse_profile("name = \"" + name + "\"\n", "p.toml");
        FAIL("accepted " << name);
      } catch (const Error& e) {
        const std::string what = e.what();
        CHECK_MESSAGE(what.find("p.toml:1: name '") == 0, what);
        CHECK_MESSAGE(what.find("has control characters (expected printable text)") != std::string::npos, what);
        CHECK(what.find('\x1b') == std::string::npos);
        CHECK(what.find('\n') == std::string::npos);
      }
    }
    CHECK(parse_profile("name = \"résumé-256 → 224\"\n", "p.toml").name == "résumé-256 → 224");
  }

  TEST_CASE("shipped profiles load by name") {
    Profile p = load_profile(INFERPROF_TEST_PROFILES_DIR "/image-classification.toml");
    CHECK(p.name == "image-classification");
    CHECK(p.input.shape == std::vector<std::int64_t>{1, 3, 224, 224});
    REQUIRE(p.input.dtype);
    CHECK(*p.input.dtype == DType::uint8);
    REQUIRE(p.preprocess.size() == 3);
    CHECK(p.preprocess[1].op == PreprocessKind::scale);
    CHECK(p.preprocess[1].factor == doctest::Approx(1.0 / 255));
    CHECK(p.preprocess[2].mean.size() == 3);
    CHECK(load_profile("image-classification").name == "image-classification");
  }

  TEST_CASE("every op parses with its parameters") {
    Profile p = parse_profile(R"(
name = "all"
[[preprocess]]
op = "layout"
from = "NHWC"
to = "NCHW"
[[preprocess]]
op = "resize"
size = [256, 256]
mode = "nearest"
[[preprocess]]
op = "center_crop"
size = [224, 224]
[[preprocess]]
op = "to_half"
)",
                              "all.toml");
    REQUIRE(p.preprocess.size() == 4);
    CHECK(p.preprocess[0].from == "NHWC");
    CHECK(p.preprocess[1].size == std::vector<std::int64_t>{256, 256});
    CHECK(p.preprocess[1].mode == ResizeMode::nearest);
    CHECK(p.preprocess[2].line == 11);  // the [[preprocess]] header of center_crop
  }

  TEST_CASE("image ops: decode first, resize by the shorter side with antialias, to_tensor") {
    Profile p = parse_profile(R"([[preprocess]]
op = "decode"
max_pixels = 1000
[[preprocess]]
op = "resize"
size = 256
mode = "bicubic"
antialias = true
[[preprocess]]
op = "to_tensor"
)",
                              "img.toml");
    REQUIRE(p.preprocess.size() == 3);
    CHECK(p.preprocess[0].max_pixels == 1000);
    CHECK(p.preprocess[1].size == std::vector<std::int64_t>{256});
    CHECK(p.preprocess[1].mode == ResizeMode::bicubic);
    CHECK(p.preprocess[1].antialias);
    // antialias changes the tensor, so it changes the L3 key.
    Profile q = parse_profile("[[preprocess]]\nop = \"resize\"\nsize = 256\nmode = \"bicubic\"\n", "q.toml");
    Profile q_aa =
        parse_profile("[[preprocess]]\nop = \"resize\"\nsize = 256\nmode = \"bicubic\"\nantialias = true\n", "q.toml");
    CHECK(q.preprocess_fingerprint() != q_aa.preprocess_fingerprint());

    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"to_float\"\n[[preprocess]]\nop = \"decode\"\n", "p.toml"),
                      "p.toml:3: 'decode' must be the first preprocessing op (it turns the encoded image into pixels)");
    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"resize\"\nsize = 0\n", "p.toml"),
                      "p.toml:3: 'size' of resize must be > 0");
    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"resize\"\nsize = [1, 2, 3]\n", "p.toml"),
                      "p.toml:3: 'size' of resize must be [height, width], or one integer: the shorter side");
    CHECK_THROWS_WITH(
        parse_profile("[[preprocess]]\nop = \"resize\"\nsize = 8\nmode = \"nearest\"\nantialias = true\n", "p.toml"),
        "p.toml:5: 'antialias' of resize needs mode \"bilinear\" or \"bicubic\"");
    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"resize\"\nsize = 8\nantialias = 1\n", "p.toml"),
                      "p.toml:4: 'antialias' of resize must be true or false");
    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"decode\"\nmax_pixels = 0\n", "p.toml"),
                      "p.toml:3: 'max_pixels' in preprocess op 'decode' must be >= 1");

    Profile shipped = load_profile(std::string(INFERPROF_TEST_PROFILES_DIR) + "/image-classification-jpeg.toml");
    std::vector<std::string> ops;
    for (const auto& op : shipped.preprocess)
      ops.emplace_back(enum_name(op.op));
    CHECK((ops == std::vector<std::string>{"decode", "resize", "center_crop", "to_tensor", "normalize"}));
    CHECK(shipped.preprocess[1].impl == ResizeImpl::pil);
  }

  TEST_CASE("resize impl: Pillow's or libtorch's, auto by default, each refusing what it cannot do") {
    const auto resize = [](const std::string& extra) {
      return parse_profile("[[preprocess]]\nop = \"resize\"\nsize = 8\n" + extra, "p.toml");
    };
    CHECK(resize("").preprocess[0].impl == ResizeImpl::automatic);
    CHECK(resize("impl = \"pil\"\nmode = \"lanczos\"\n").preprocess[0].mode == ResizeMode::lanczos);
    CHECK(resize("impl = \"torch\"\nantialias = true\n").preprocess[0].impl == ResizeImpl::torch);
    // torchvision resizes tensors without the filter unless asked: a profile that turns it off models that.
    CHECK(resize("antialias = false\n").preprocess[0].impl == ResizeImpl::torch);
    // Whose resize changes the tensors, so it changes the L3 key.
    CHECK(resize("impl = \"pil\"\n").preprocess_fingerprint() != resize("impl = \"torch\"\n").preprocess_fingerprint());
    CHECK_THROWS_WITH(resize("impl = \"opencv\"\n"),
                      "p.toml:4: 'impl' of resize must be \"auto\", \"pil\" or \"torch\"");
    CHECK_THROWS_WITH(resize("impl = \"pil\"\nantialias = false\n"),
                      "p.toml:5: 'antialias = false' of resize needs impl = \"torch\" (PIL always filters when "
                      "shrinking)");
    CHECK_THROWS_WITH(resize("impl = \"torch\"\nmode = \"hamming\"\n"),
                      "p.toml:5: mode \"hamming\" of resize is Pillow's: it needs impl = \"pil\" or \"auto\"");
  }

  TEST_CASE("bad profiles name the file, the line and what was expected") {
    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"blur\"\n", "p.toml"),
                      "p.toml:2: unknown preprocessing op 'blur' (expected one of: decode, to_tensor, to_float, "
                      "to_half, scale, normalize, resize, center_crop, layout, tokenize)");
    CHECK_THROWS_WITH(parse_profile("[model]\nthreads = \"two\"\n", "p.toml"),
                      "p.toml:2: 'threads' in [model] must be an integer");
    CHECK_THROWS_WITH(parse_profile("[model]\nthread = 2\n", "p.toml"),
                      "p.toml:2: unknown key 'thread' in [model] (expected device, threads, warmup, update)");
    CHECK_THROWS_WITH(parse_profile("[model]\nupdate = \"later\"\n", "p.toml"),
                      "p.toml:2: 'update' in [model] must be \"sync\", \"async\" or \"preload\" (got 'later')");
    CHECK(parse_profile("[model]\nupdate = \"preload\"\n", "p.toml").model.update == UpdateMode::preload);
    CHECK(parse_profile("", "p.toml").model.update == UpdateMode::sync);
    CHECK_THROWS_WITH(parse_profile("[cache.l2]\nbackend = \"memcached\"\n", "p.toml"),
                      "p.toml:2: 'backend' in [cache.l2] must be \"memory\", \"redis\" or \"lmdb\" (got 'memcached')");
    CHECK_THROWS_WITH(parse_profile("[cache.l1]\nbackend = \"redis\"\n", "p.toml"),
                      "p.toml:2: [cache.l1] is in-process: backend must be \"memory\"");
    CHECK(parse_profile("[cache.l3]\nbackend = \"redis\"\nurl = \"redis://h:1\"\n", "p.toml").cache.l3->backend ==
          TierBackend::redis);
    // A TTL of zero is refused as a tier spec's ":0s" is: no TTL is spelt by leaving it out.
    CHECK_THROWS_WITH(parse_profile("[cache.l1]\nttl = 0\n", "p.toml"),
                      "p.toml:2: 'ttl' in [cache.l1] must be above 0 (leave it out and entries never expire)");
    CHECK_THROWS_WITH(parse_profile("[cache.l1]\nttl = \"0s\"\n", "p.toml"),
                      "p.toml:2: 'ttl' in [cache.l1] must be above 0 (leave it out and entries never expire)");
    CHECK(parse_profile("[cache.l1]\nttl = \"30s\"\n", "p.toml").cache.l1->ttl_s == 30);
    CHECK(parse_profile("[cache.l1]\npolicy = \"lru\"\n", "p.toml").cache.l1->ttl_s == 0);
    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"scale\"\n", "p.toml"),
                      "p.toml:1: preprocess op 'scale' needs 'factor'");
    CHECK_THROWS_WITH(parse_profile("[[preprocess]]\nop = \"normalize\"\nmean = [1, 2]\nstd = [1]\n", "p.toml"),
                      "p.toml:1: normalize has 2 means but 1 stds");
    CHECK_THROWS_WITH(parse_profile("[input]\ndtype = \"float8\"\n", "p.toml"),
                      "p.toml:2: 'dtype' in [input] must be one of uint8, int8, int16, int32, int64, float16, "
                      "float32, float64, bool (got 'float8')");
    CHECK_THROWS_WITH(parse_profile("name = \n", "p.toml"), doctest::Contains("p.toml:1: invalid TOML: "));
    try {
      parse_profile("[model]\nwarmup = -1\n", "p.toml");
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 2);
      CHECK(std::string(e.what()) == "p.toml:2: 'warmup' in [model] must be >= 0");
    }
  }

  TEST_CASE("missing profiles") {
    CHECK_THROWS_WITH(load_profile("no/such.toml"), "profile 'no/such.toml' not found");
    CHECK_THROWS_WITH(load_profile("nosuchprofile"),
                      doctest::Contains("no profile named 'nosuchprofile' (available: "));
  }

  TEST_CASE("sections of later issues are accepted, unknown ones are not") {
    CHECK_NOTHROW(parse_profile("[cache.l1]\npolicy = \"lru\"\n", "p.toml"));
    CHECK_THROWS_WITH(parse_profile("[modle]\n", "p.toml"), doctest::Contains("p.toml:1: unknown key 'modle'"));
  }

  TEST_CASE("the preprocessing fingerprint changes with any parameter") {
    Profile a = load_profile("");
    Profile b = a;
    CHECK(a.preprocess_fingerprint() == b.preprocess_fingerprint());
    PreprocessOp scale;
    scale.op = PreprocessKind::scale;
    scale.factor = 0.5;
    b.preprocess.push_back(scale);
    Profile c = b;
    c.preprocess.back().factor = 0.25;
    CHECK(a.preprocess_fingerprint() != b.preprocess_fingerprint());
    CHECK(b.preprocess_fingerprint() != c.preprocess_fingerprint());
  }
}
