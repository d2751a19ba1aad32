#include <fmt/format.h>

#include <cmath>

#include "image/image.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "pipeline/torch_detail.hpp"

namespace inferprof::detail {

Preprocessor::Preprocessor(const std::vector<PreprocessOp>& ops, std::string trace_path)
    : trace_path_(std::move(trace_path)) {
  for (const auto& op : ops) {
    Step step{op, NameTable::global().intern(op.op), {}, {}, {}};
    if (op.op == "normalize") {
      auto c = static_cast<std::int64_t>(op.mean.size());
      step.mean = at::tensor(op.mean, at::kFloat).view({1, c, 1, 1});
      step.std = at::tensor(op.std, at::kFloat).view({1, c, 1, 1});
    } else if (op.op == "layout") {
      for (char axis : op.to)
        step.permutation.push_back(static_cast<std::int64_t>(op.from.find(axis)));
    }
    steps_.push_back(std::move(step));
  }
}

namespace {

bool is_image(const TraceRequest& request) {
  return request.input.kind == InputSpec::Kind::image || request.input.kind == InputSpec::Kind::image_base64;
}

// Encoded bytes -> [1, 3, H, W] uint8. The tensor is a view of the decoder's
// interleaved RGB buffer (channels-last memory): no copy; to_tensor makes it
// channels-first.
at::Tensor decode(const at::Tensor& bytes, const PreprocessOp& op, const TraceRequest& request,
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
    const std::string what = request.input.kind == InputSpec::Kind::image
                                 ? fmt::format("image '{}'", printable(request.input.file))
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

at::Tensor apply(const at::Tensor& x, const PreprocessOp& op, const at::Tensor& mean, const at::Tensor& std,
                 const std::vector<std::int64_t>& permutation, const TraceRequest& request,
                 const std::string& trace_path) {
  auto fail = [&](std::string_view why) -> at::Tensor {
    throw runtime_failure(fmt::format("request {}: preprocessing op '{}' cannot apply to input of shape {}: {}",
                                      request.id, op.op, format_shape(x.sizes().vec()), why));
  };
  if (op.op == "decode") {
    if (!is_image(request) || x.dim() != 1 || x.scalar_type() != at::kByte)
      return fail("decode needs an image input (input.image or input.image_base64)");
    return decode(x, op, request, trace_path);
  }
  // A 1-D byte tensor of an image input that no decode op turned into pixels.
  if (is_image(request) && x.dim() == 1)
    return fail("an image input needs 'decode' as the profile's first op (e.g. --profile image-classification-jpeg)");
  // torchvision's ToTensor: float32 in [0, 1], channels-first in memory.
  if (op.op == "to_tensor") {
    at::Tensor f = x.to(at::kFloat);
    if (x.scalar_type() == at::kByte) f.div_(255.0);
    return f.contiguous();
  }
  if (op.op == "to_float") return x.to(at::kFloat);
  if (op.op == "to_half") return x.to(at::kHalf);
  if (op.op == "scale") return x.is_floating_point() ? x.mul(op.factor) : x.to(at::kFloat).mul(op.factor);
  if (op.op == "normalize") {
    if (x.dim() != 4 || x.size(1) != mean.size(1))
      return fail(fmt::format("expected [N, {}, H, W] (the profile gives {} channels)", mean.size(1), mean.size(1)));
    at::Tensor f = x.is_floating_point() ? x : x.to(at::kFloat);
    return f.sub(mean.to(f.scalar_type())).div_(std.to(f.scalar_type()));
  }
  if (op.op == "resize") {
    if (x.dim() != 4) return fail("expected [N, C, H, W]");
    const std::vector<std::int64_t> size =
        op.size.size() == 1 ? shorter_side_size(x.size(2), x.size(3), op.size[0]) : op.size;
    // Channels-first in memory: libtorch 1.13's antialiased kernels take twice as
    // long on a channels-last view (what decode gives); one pass converts both.
    at::Tensor f = x.to(x.is_floating_point() ? x.scalar_type() : at::kFloat, /*non_blocking=*/false, /*copy=*/false,
                        at::MemoryFormat::Contiguous);
    at::Tensor out;
    if (op.mode == "nearest")
      out = at::upsample_nearest2d(f, size);
    else if (op.mode == "bicubic")
      out = op.antialias ? at::_upsample_bicubic2d_aa(f, size, /*align_corners=*/false)
                         : at::upsample_bicubic2d(f, size, /*align_corners=*/false);
    else
      out = op.antialias ? at::_upsample_bilinear2d_aa(f, size, /*align_corners=*/false)
                         : at::upsample_bilinear2d(f, size, /*align_corners=*/false);
    // uint8 pixels stay uint8, rounded (bicubic overshoots: clamped), as torchvision and PIL do.
    if (x.scalar_type() == at::kByte) return out.round_().clamp_(0, 255).to(at::kByte);
    return out;
  }
  if (op.op == "center_crop") {
    if (x.dim() < 2) return fail("expected at least 2 dimensions");
    auto h = x.size(-2), w = x.size(-1);
    if (op.size[0] > h || op.size[1] > w)
      return fail(fmt::format("crop {}x{} is larger than the image {}x{}", op.size[0], op.size[1], h, w));
    return x.narrow(-2, crop_offset(h, op.size[0]), op.size[0]).narrow(-1, crop_offset(w, op.size[1]), op.size[1]);
  }
  if (op.op == "layout") {
    if (x.dim() != static_cast<std::int64_t>(permutation.size()))
      return fail(fmt::format("layout {} -> {} needs {} dimensions", op.from, op.to, permutation.size()));
    // contiguous(): the model sees the memory order it would get from a real converter.
    return x.permute(permutation).contiguous();
  }
  return fail("unknown op");
}

}  // namespace

at::Tensor Preprocessor::run(at::Tensor x, const TraceRequest& request, RequestRecord& record,
                             std::int32_t parent) const {
  for (const auto& step : steps_) {
    ScopedSpan span(record, step.name, parent);
    try {
      x = apply(x, step.op, step.mean, step.std, step.permutation, request, trace_path_);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw runtime_failure(fmt::format("request {}: preprocessing op '{}' failed on input of shape {}: {}", request.id,
                                        step.op.op, format_shape(x.sizes().vec()), torch_error_line(e)));
    }
  }
  return x;
}

}  // namespace inferprof::detail
