#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "image/image.hpp"
#include "image/resample.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "pipeline/torch_detail.hpp"

namespace inferprof::detail {

Preprocessor::Preprocessor(const std::vector<PreprocessOp>& ops, std::string trace_path,
                           const std::string& profile_source)
    : trace_path_(std::move(trace_path)), truncate_name_(NameTable::global().intern("truncate")) {
  const std::vector<std::string> parts = preprocess_op_names(ops);
  parts_ = parts.size();
  for (const auto& op : ops) {
    Step step{op, NameTable::global().intern(enum_name(op.op)), {}, {}, {}, {}, 0, 0};
    step.part = static_cast<std::size_t>(std::find(parts.begin(), parts.end(), enum_name(op.op)) - parts.begin());
    if (op.op == PreprocessKind::tokenize) {
      try {
        step.tokenizer = std::make_shared<const text::Tokenizer>(op.model);
      } catch (const text::TokenizerError& e) {
        throw bad_input(at_line(profile_source.empty() ? "profile" : profile_source, op.line,
                                fmt::format("tokenize: model '{}': {}", printable(op.model), printable(e.what))));
      }
      step.pad_id = op.pad_id >= 0 ? op.pad_id : std::max(step.tokenizer->pad_id(), 0);
    } else if (op.op == PreprocessKind::normalize) {
      auto c = static_cast<std::int64_t>(op.mean.size());
      step.mean = at::tensor(op.mean, at::kFloat).view({1, c, 1, 1});
      step.std = at::tensor(op.std, at::kFloat).view({1, c, 1, 1});
    } else if (op.op == PreprocessKind::layout) {
      for (char axis : op.to)
        step.permutation.push_back(static_cast<std::int64_t>(op.from.find(axis)));
    }
    steps_.push_back(std::move(step));
  }
}

namespace {

bool is_image(const InputSpec* spec) {
  return spec && (spec->kind == InputSpec::Kind::image || spec->kind == InputSpec::Kind::image_base64);
}

bool is_text(const InputSpec* spec) {
  return spec && (spec->kind == InputSpec::Kind::text || spec->kind == InputSpec::Kind::text_file);
}

// Encoded bytes -> [1, 3, H, W] uint8. The tensor is a view of the decoder's
// interleaved RGB buffer (channels-last memory): no copy; to_tensor makes it
// channels-first.
at::Tensor decode(const at::Tensor& bytes, const PreprocessOp& op, const InputSpec& spec, const TraceRequest& request,
                  const std::string& trace_path) {
  at::Tensor pixels;
  try {
    image::decode_rgb(static_cast<const std::uint8_t*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel()),
                      op.max_pixels ? op.max_pixels : image::kDefaultMaxPixels, [&](const image::Header& h) {
                        pixels = at::empty(
                            {1, static_cast<std::int64_t>(h.height), static_cast<std::int64_t>(h.width), 3}, at::kByte);
                        return static_cast<std::uint8_t*>(pixels.data_ptr());
                      });
  } catch (const image::DecodeError& e) {
    const std::string what = spec.kind == InputSpec::Kind::image ? fmt::format("image '{}'", printable(spec.file))
                                                                 : std::string("input.image_base64");
    throw bad_input(fmt::format("{}: {}: {}", request_where(trace_path, request), what, e.what));
  }
  return pixels.permute({0, 3, 1, 2});
}

// torchvision's Resize(int): the shorter side becomes `side`, the longer one
// keeps the aspect ratio (truncated, as int() does).
std::vector<std::int64_t> shorter_side_size(std::int64_t h, std::int64_t w, std::int64_t side) {
  const std::int64_t shorter = std::min(h, w), longer = std::max(h, w);
  const auto scaled = static_cast<std::int64_t>(static_cast<double>(side * longer) / static_cast<double>(shorter));
  return h <= w ? std::vector<std::int64_t>{side, scaled} : std::vector<std::int64_t>{scaled, side};
}

// Python's round() of (extent - crop) / 2, which torchvision's center_crop uses: halves to even.
std::int64_t crop_offset(std::int64_t extent, std::int64_t crop) {
  const std::int64_t diff = extent - crop;
  const std::int64_t half = diff / 2;
  return diff % 2 == 0 ? half : half + (half % 2);
}

image::Filter filter_of(ResizeMode mode) {
  switch (mode) {
    case ResizeMode::nearest:
      return image::Filter::nearest;
    case ResizeMode::bicubic:
      return image::Filter::bicubic;
    case ResizeMode::lanczos:
      return image::Filter::lanczos;
    case ResizeMode::box:
      return image::Filter::box;
    case ResizeMode::hamming:
      return image::Filter::hamming;
    case ResizeMode::bilinear:
      break;
  }
  return image::Filter::bilinear;
}

// [N, C, H, W] uint8 -> [N, C, size] uint8 as Pillow resizes, on interleaved
// rows: decode's output is already channels-last in memory, so no copy in.
at::Tensor resize_pil(const at::Tensor& x, const std::vector<std::int64_t>& size, image::Filter filter) {
  const at::Tensor in = x.permute({0, 2, 3, 1}).contiguous();
  const auto n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  at::Tensor out = at::empty({n, size[0], size[1], c}, at::kByte);
  for (std::int64_t i = 0; i < n; ++i)
    image::resample(in[i].data_ptr<std::uint8_t>(), static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h),
                    static_cast<std::uint32_t>(c), out[i].data_ptr<std::uint8_t>(), static_cast<std::uint32_t>(size[1]),
                    static_cast<std::uint32_t>(size[0]), filter);
  return out.permute({0, 3, 1, 2});
}

at::Tensor apply(const at::Tensor& x, const PreprocessOp& op, const at::Tensor& mean, const at::Tensor& std,
                 const std::vector<std::int64_t>& permutation, const InputSpec* spec, const TraceRequest& request,
                 const std::string& trace_path) {
  auto fail = [&](std::string_view why) -> at::Tensor {
    throw runtime_failure(fmt::format("request {}: preprocessing op '{}' cannot apply to input of shape {}: {}",
                                      request.id, enum_name(op.op), format_shape(x.sizes().vec()), why));
  };
  if (op.op == PreprocessKind::decode) {
    if (!is_image(spec) || x.dim() != 1 || x.scalar_type() != at::kByte)
      return fail("decode needs an image input (input.image or input.image_base64)");
    return decode(x, op, *spec, request, trace_path);
  }
  // A 1-D byte tensor of an image input that no decode op turned into pixels.
  if (is_image(spec) && x.dim() == 1)
    return fail("an image input needs 'decode' as the profile's first op (e.g. --profile image-classification-jpeg)");
  if (is_text(spec))
    return fail("a text input needs 'tokenize' as the profile's first op (e.g. --profile text-classification)");
  // torchvision's ToTensor: float32 in [0, 1], channels-first in memory.
  if (op.op == PreprocessKind::to_tensor) {
    at::Tensor f = x.to(at::kFloat);
    if (x.scalar_type() == at::kByte) f.div_(255.0);
    return f.contiguous();
  }
  // int64 tensors are token ids (an embedding's indices): a cast would make them unusable.
  if (op.op == PreprocessKind::to_float) return x.scalar_type() == at::kLong ? x : x.to(at::kFloat);
  if (op.op == PreprocessKind::to_half) return x.scalar_type() == at::kLong ? x : x.to(at::kHalf);
  if (op.op == PreprocessKind::scale) return x.is_floating_point() ? x.mul(op.factor) : x.to(at::kFloat).mul(op.factor);
  if (op.op == PreprocessKind::normalize) {
    if (x.dim() != 4 || x.size(1) != mean.size(1))
      return fail(fmt::format("expected [N, {}, H, W] (the profile gives {} channels)", mean.size(1), mean.size(1)));
    at::Tensor f = x.is_floating_point() ? x : x.to(at::kFloat);
    return f.sub(mean.to(f.scalar_type())).div_(std.to(f.scalar_type()));
  }
  if (op.op == PreprocessKind::resize) {
    if (x.dim() != 4) return fail("expected [N, C, H, W]");
    if (x.size(2) == 0 || x.size(3) == 0) return fail("an empty image has nothing to resize");
    const std::vector<std::int64_t> size =
        op.size.size() == 1 ? shorter_side_size(x.size(2), x.size(3), op.size[0]) : op.size;
    // A thin strip resized by its shorter side can ask for billions of pixels.
    if (static_cast<double>(size[0]) * static_cast<double>(size[1]) > static_cast<double>(image::kDefaultMaxPixels))
      return fail(
          fmt::format("the resized image would be {}x{}, over {} pixels", size[0], size[1], image::kDefaultMaxPixels));
    const bool pixels = x.scalar_type() == at::kByte;
    if (op.impl == ResizeImpl::pil || (op.impl == ResizeImpl::automatic && pixels)) {
      if (!pixels)
        return fail(
            fmt::format("impl \"pil\" resizes 8-bit pixels, not {} (put resize before to_tensor, or set "
                        "impl = \"torch\")",
                        c10::toString(x.scalar_type())));
      if (x.size(1) < 1 || x.size(1) > 4) return fail("Pillow's resize takes 1 to 4 channels");
      return resize_pil(x, size, filter_of(op.mode));
    }
    if (pillow_only(op.mode))
      return fail(fmt::format("mode \"{}\" is Pillow's and needs 8-bit pixels (put resize before to_tensor)",
                              enum_name(op.mode)));
    // Channels-first in memory: libtorch 1.13's antialiased kernels take twice as
    // long on a channels-last view (what decode gives); one pass converts both.
    at::Tensor f = x.to(x.is_floating_point() ? x.scalar_type() : at::kFloat, /*non_blocking=*/false, /*copy=*/false,
                        at::MemoryFormat::Contiguous);
    at::Tensor out;
    if (op.mode == ResizeMode::nearest)
      out = at::upsample_nearest2d(f, size);
    else if (op.mode == ResizeMode::bicubic)
      out = op.antialias ? at::_upsample_bicubic2d_aa(f, size, /*align_corners=*/false)
                         : at::upsample_bicubic2d(f, size, /*align_corners=*/false);
    else
      out = op.antialias ? at::_upsample_bilinear2d_aa(f, size, /*align_corners=*/false)
                         : at::upsample_bilinear2d(f, size, /*align_corners=*/false);
    // uint8 pixels stay uint8, rounded (bicubic overshoots: clamped), as torchvision and PIL do.
    if (x.scalar_type() == at::kByte) return out.round_().clamp_(0, 255).to(at::kByte);
    return out;
  }
  if (op.op == PreprocessKind::center_crop) {
    if (x.dim() < 2) return fail("expected at least 2 dimensions");
    auto h = x.size(-2), w = x.size(-1);
    if (op.size[0] > h || op.size[1] > w)
      return fail(fmt::format("crop {}x{} is larger than the image {}x{}", op.size[0], op.size[1], h, w));
    return x.narrow(-2, crop_offset(h, op.size[0]), op.size[0]).narrow(-1, crop_offset(w, op.size[1]), op.size[1]);
  }
  if (op.op == PreprocessKind::layout) {
    if (x.dim() != static_cast<std::int64_t>(permutation.size()))
      return fail(fmt::format("layout {} -> {} needs {} dimensions", op.from, op.to, permutation.size()));
    // contiguous(): the model sees the memory order it would get from a real converter.
    return x.permute(permutation).contiguous();
  }
  return fail("unknown op");
}

}  // namespace

Preprocessor::~Preprocessor() {
  // Counted over every tokenisation (warm-up and verification included).
  if (const auto n = truncated_.load())
    fmt::print(stderr, "inferprof: warning: {} of {} texts were longer than max_length and were truncated\n", n,
               texts_.load());
  if (const auto n = empty_.load())
    fmt::print(stderr, "inferprof: warning: {} of {} texts gave no tokens: the model was given padding only\n", n,
               texts_.load());
}

// Text bytes -> ids [1, max_length] int64 (truncated or padded), and the mask
// after them (positional) or under op.mask_input (named). Other inputs pass through.
void Preprocessor::tokenize(const Step& step, Inputs& x, const TraceRequest& request, RequestRecord& record,
                            std::int32_t span) const {
  const PreprocessOp& op = step.op;
  thread_local std::vector<int> ids;
  for (std::size_t i = 0; i < x.tensors.size(); ++i) {
    if (!is_text(x.specs[i])) continue;
    const at::Tensor& bytes = x.tensors[i];
    try {
      // Only what max_length can use is tokenized: a 10 MB text costs what a few KB do.
      step.tokenizer->encode(
          std::string_view(static_cast<const char*>(bytes.data_ptr()), static_cast<std::size_t>(bytes.numel())), ids,
          static_cast<std::size_t>(op.max_length));
    } catch (const text::TokenizerError& e) {
      throw runtime_failure(fmt::format("{}: tokenize: {}", request_where(trace_path_, request), printable(e.what)));
    }
    const Nanos t0 = now_ns();
    at::Tensor out = at::empty({1, op.max_length}, at::kLong);
    at::Tensor mask = op.mask ? at::empty({1, op.max_length}, at::kLong) : at::Tensor();
    const bool truncated = text::fit(ids, static_cast<std::size_t>(op.max_length), step.pad_id,
                                     out.data_ptr<std::int64_t>(), op.mask ? mask.data_ptr<std::int64_t>() : nullptr);
    ++texts_;
    // An empty text (or one of only what the tokenizer drops) still reaches the model, as padding.
    if (ids.empty() && empty_++ == 0)
      fmt::print(stderr,
                 "inferprof: warning: {}: text gave no tokens: the model is given padding only (more are counted)\n",
                 request_where(trace_path_, request));
    if (truncated) {
      // A child span per truncated text: the report counts them.
      record.add(truncate_name_, span, t0, now_ns() - t0);
      if (truncated_++ == 0)
        fmt::print(stderr,
                   "inferprof: warning: {}: text of more than {} tokens truncated to max_length (more are counted)\n",
                   request_where(trace_path_, request), op.max_length);
    }
    x.tensors[i] = std::move(out);
    x.specs[i] = nullptr;
    if (!op.mask) continue;
    const auto at = static_cast<std::ptrdiff_t>(i + 1);
    x.tensors.insert(x.tensors.begin() + at, std::move(mask));
    x.specs.insert(x.specs.begin() + at, nullptr);
    if (!x.names.empty()) x.names.insert(x.names.begin() + at, op.mask_input);
    ++i;
  }
}

Inputs Preprocessor::run(Inputs x, const TraceRequest& request, RequestRecord& record, std::int32_t parent) const {
  // Sized once per worker's record (reset() keeps the size and zeroes the sums).
  if (record.preprocess_op.size() < parts_) {
    record.preprocess_op.resize(parts_, 0);
    record.preprocess_op_cpu.resize(parts_, 0);
  }
  for (const auto& step : steps_) {
    // Each op reads the CPU clock too (when the request does): the reports show it as a part of preprocess.
    ScopedSpan span(record, step.name, parent, /*cpu=*/true,
                    SpanSums{&record.preprocess_op[step.part], &record.preprocess_op_cpu[step.part]});
    if (step.tokenizer) {
      tokenize(step, x, request, record, span.index());
      continue;
    }
    for (std::size_t i = 0; i < x.tensors.size(); ++i) {
      at::Tensor& t = x.tensors[i];
      try {
        const bool decode = step.op.op == PreprocessKind::decode;
        if (decode) record.image_bytes += static_cast<std::uint64_t>(t.numel());
        t = apply(t, step.op, step.mean, step.std, step.permutation, x.specs[i], request, trace_path_);
        if (decode) record.image_pixels += static_cast<std::uint64_t>(t.size(2) * t.size(3));
      } catch (const Error&) {
        throw;
      } catch (const std::exception& e) {
        throw runtime_failure(fmt::format("request {}: preprocessing op '{}' failed on input of shape {}: {}",
                                          request.id, enum_name(step.op.op), format_shape(t.sizes().vec()),
                                          torch_error_line(e)));
      }
    }
  }
  // Bytes no op turned into a tensor (a profile without ops) would reach the model.
  for (const InputSpec* spec : x.specs) {
    if (is_text(spec))
      throw runtime_failure(fmt::format(
          "{}: a text input needs 'tokenize' as the profile's first op (e.g. --profile text-classification)",
          request_where(trace_path_, request)));
    if (is_image(spec) && steps_.empty())
      throw runtime_failure(
          fmt::format("{}: an image input needs 'decode' as the profile's first op (e.g. --profile "
                      "image-classification-jpeg)",
                      request_where(trace_path_, request)));
  }
  return x;
}

at::Tensor Preprocessor::run(at::Tensor x, const TraceRequest& request, RequestRecord& record,
                             std::int32_t parent) const {
  Inputs in;
  in.tensors.push_back(std::move(x));
  in.specs.push_back(&request.input);
  in = run(std::move(in), request, record, parent);
  return in.tensors.front();
}

}  // namespace inferprof::detail
