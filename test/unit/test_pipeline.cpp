#include <fstream>
#include <set>

#include "inferprof/error.hpp"
#include "inferprof/pipeline.hpp"
#include "temp_dir.hpp"
#include "torch_doctest.hpp"  // libtorch, then doctest (the order is kept inside)

using namespace inferprof;
using inferprof::testing::TempDir;

namespace {

TraceRequest seed_request(std::uint64_t id, std::vector<std::int64_t> shape = {}) {
  TraceRequest r;
  r.id = id;
  r.input.kind = InputSpec::Kind::seed;
  r.input.seed = id;
  r.input.shape = std::move(shape);
  return r;
}

std::vector<std::string> span_names(const RequestRecord& r) {
  std::vector<std::string> names;
  for (const auto& s : r.spans)
    names.emplace_back(NameTable::global().name(s.name));
  return names;
}

// A minimal .npy writer for the tests: float32, C order.
void write_npy(const std::string& path, const std::vector<float>& values, const std::string& shape) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0)
    header += ' ';
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  auto len = static_cast<std::uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out << header;
  out.write(reinterpret_cast<const char*>(values.data()), static_cast<std::streamsize>(values.size() * 4));
}

}  // namespace

TEST_SUITE("pipeline") {
  TEST_CASE("gen-model writes a loadable MLP with its metadata - seeds change the weights") {
    TempDir dir;
    ModelMetadata meta = generate_model({"mlp", 7, dir.file("m.pt")});
    CHECK(meta.parameters == 16 * 64 + 64 + 64 * 64 + 64 + 64 * 10 + 10);
    Pipeline p(dir.file("m.pt"), load_profile(""), {});
    CHECK(p.model().meta.arch == "mlp");
    CHECK(p.model().meta.seed == 7);
    CHECK(p.model().meta.input_shape == std::vector<std::int64_t>{1, 16});
    CHECK(p.model().parameters == meta.parameters);
    CHECK(p.model().file_bytes > 0);
    CHECK(p.default_shape() == std::vector<std::int64_t>{1, 16});

    generate_model({"mlp", 8, dir.file("m8.pt")});
    auto a = torch::jit::load(dir.file("m.pt"));
    auto b = torch::jit::load(dir.file("m8.pt"));
    auto x = torch::ones({1, 16});
    CHECK_FALSE(a.forward({x}).toTensor().equal(b.forward({x}).toTensor()));
    CHECK_THROWS_WITH(generate_model({"vgg", 0, dir.file("v.pt")}),
                      "unknown architecture 'vgg' (expected one of: mlp, cnn, resnet18, text)");
  }

  TEST_CASE("serve records input, preprocess with one child per op, and compute") {
    TempDir dir;
    generate_model({"mlp", 1, dir.file("m.pt")});
    Pipeline p(dir.file("m.pt"), load_profile(""), {});
    RequestRecord r;
    r.start = now_ns();
    p.serve(seed_request(3), r);
    r.finish();
    CHECK(span_names(r) == std::vector<std::string>{"input", "preprocess", "to_float", "compute"});
    CHECK(r.spans[2].parent == 1);
    for (auto stage : {Stage::input, Stage::preprocess, Stage::compute})
      CHECK(r.stage[static_cast<std::size_t>(stage)] > 0);
    CHECK(r.stage[static_cast<std::size_t>(Stage::overhead)] >= 0);
  }

  TEST_CASE("--ops: aten operators nest under compute") {
    TempDir dir;
    generate_model({"mlp", 1, dir.file("m.pt")});
    PipelineOptions options;
    options.record_ops = true;
    Pipeline p(dir.file("m.pt"), load_profile(""), options);
    RequestRecord r;
    r.start = now_ns();
    p.serve(seed_request(1), r);
    r.finish();
    std::set<std::string> ops;
    std::int32_t compute = -1;
    for (std::size_t i = 0; i < r.spans.size(); ++i) {
      const Span& s = r.spans[i];
      if (s.name == name_id(Stage::compute)) compute = static_cast<std::int32_t>(i);
      if (compute >= 0 && static_cast<std::int32_t>(i) > compute) {
        ops.insert(std::string(NameTable::global().name(s.name)));
        const Span& parent = r.spans[static_cast<std::size_t>(s.parent)];
        CHECK(s.start >= parent.start);
        CHECK(s.start + s.dur <= parent.start + parent.dur);
      }
    }
    CHECK(ops.count("aten::linear") == 1);
    CHECK(ops.count("aten::relu") == 1);
    // Ops outside compute (the preprocessing's aten::to) are not recorded.
    CHECK(r.spans[2].name == NameTable::global().intern("to_float"));
    CHECK(r.spans[3].name == name_id(Stage::compute));
  }

  TEST_CASE("inputs: inline data, .npy files and seeds") {
    TempDir dir;
    generate_model({"mlp", 1, dir.file("m.pt")});
    Pipeline p(dir.file("m.pt"), load_profile(""), {});
    RequestRecord r;

    TraceRequest data;
    data.id = 4;
    data.input.kind = InputSpec::Kind::data;
    data.input.data.assign(16, 0.5);
    data.input.shape = {1, 16};
    CHECK_NOTHROW(p.serve(data, r));

    std::vector<float> values(16, 0.25f);
    write_npy(dir.file("x.npy"), values, "(1, 16)");
    at::Tensor t = inferprof::detail::read_npy(dir.file("x.npy"));
    CHECK(t.sizes().vec() == std::vector<std::int64_t>{1, 16});
    CHECK(t[0][5].item<float>() == 0.25f);
    TraceRequest file;
    file.id = 5;
    file.input.kind = InputSpec::Kind::file;
    file.input.file = dir.file("x.npy");
    CHECK_NOTHROW(p.serve(file, r));

    std::ofstream(dir.file("bad.npy")) << "hello";
    CHECK_THROWS_WITH(inferprof::detail::read_npy(dir.file("bad.npy")),
                      ("input file '" + dir.file("bad.npy") + "': not a .npy file (bad magic)").c_str());

    // Same seed, same tensor: equal keys mean equal inputs.
    auto a = inferprof::detail::make_input(seed_request(9, {2, 3}), {}, DType::float32, "");
    auto b = inferprof::detail::make_input(seed_request(9, {2, 3}), {}, DType::float32, "");
    CHECK(a.equal(b));
    auto u = inferprof::detail::make_input(seed_request(9, {1, 3, 4, 4}), {}, DType::uint8, "");
    CHECK((u.scalar_type() == at::kByte));
  }

  TEST_CASE("preprocessing ops compute what they say") {
    Profile image = load_profile(INFERPROF_TEST_PROFILES_DIR "/image-classification.toml");
    inferprof::detail::Preprocessor pre(image.preprocess);
    RequestRecord r;
    TraceRequest req;
    at::Tensor x = at::full({1, 3, 2, 2}, 255, at::kByte);
    at::Tensor y = pre.run(x, req, r, -1);
    CHECK((y.scalar_type() == at::kFloat));
    CHECK(y[0][0][0][0].item<float>() == doctest::Approx((1.0 - 0.485) / 0.229).epsilon(1e-5));
    CHECK(y[0][2][1][1].item<float>() == doctest::Approx((1.0 - 0.406) / 0.225).epsilon(1e-5));
    CHECK(span_names(r) == std::vector<std::string>{"to_float", "scale", "normalize"});

    Profile geo = parse_profile(R"(
[[preprocess]]
op = "layout"
from = "NHWC"
to = "NCHW"
[[preprocess]]
op = "resize"
size = [8, 10]
[[preprocess]]
op = "center_crop"
size = [4, 4]
)",
                                "geo.toml");
    inferprof::detail::Preprocessor g(geo.preprocess);
    at::Tensor img = at::rand({1, 6, 6, 3});
    CHECK(g.run(img, req, r, -1).sizes().vec() == std::vector<std::int64_t>{1, 3, 4, 4});
    req.id = 12;
    CHECK_THROWS_WITH(pre.run(at::zeros({1, 16}), req, r, -1),
                      "request 12: preprocessing op 'normalize' cannot apply to input of shape [1, 16]: expected "
                      "[N, 3, H, W] (the profile gives 3 channels)");
  }

  TEST_CASE("bad models: missing is bad input, garbage and truncated archives fail to load") {
    TempDir dir;
    Profile profile = load_profile("");
    try {
      Pipeline p(dir.file("none.pt"), profile, {});
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 2);
      CHECK(std::string(e.what()) == "model '" + dir.file("none.pt") + "' not found");
    }
    std::ofstream(dir.file("text.pt")) << "not a model";
    try {
      Pipeline p(dir.file("text.pt"), profile, {});
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 3);
      CHECK(std::string(e.what()).rfind(
                "cannot load model '" + dir.file("text.pt") + "': not a TorchScript archive, or a truncated one (",
                0) == 0);
    }
    generate_model({"mlp", 1, dir.file("m.pt")});
    std::filesystem::resize_file(dir.file("m.pt"), std::filesystem::file_size(dir.file("m.pt")) / 2);
    try {
      Pipeline p(dir.file("m.pt"), profile, {});
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 3);
      CHECK(std::string(e.what()).find("cannot load model") == 0);
    }
  }

  TEST_CASE("a shape the model rejects names the request, its shape, what the model takes and the flag that gives it") {
    TempDir dir;
    generate_model({"mlp", 1, dir.file("m.pt")});
    Pipeline p(dir.file("m.pt"), load_profile(""), {});
    RequestRecord r;
    try {
      p.serve(seed_request(7, {1, 8}), r);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == 3);
      CHECK(std::string(e.what()) ==
            "request 7: the model rejected the input [1, 8] float32: the model expects [N, 16] float32 (its first "
            "layer 'fc1_weight' is [64, 16]): use --shape 1,16");
    }
  }

  TEST_CASE("thread count is set and read back") {
    CHECK(configure_threads(1) == 1);
    CHECK(configure_threads(2) == 2);
    CHECK(configure_threads(1) == 1);
    CHECK_FALSE(libtorch_version().empty());
  }
}
