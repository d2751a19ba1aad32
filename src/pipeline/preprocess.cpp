#include <fmt/format.h>

#include "inferprof/error.hpp"
#include "pipeline/torch_detail.hpp"

namespace inferprof::detail {

Preprocessor::Preprocessor(const std::vector<PreprocessOp>& ops) {
  for (const auto& op : ops) {
    Step step{op, NameTable::global().intern(op.op), {}, {}, {}};
    if (op.op == "normalize") {
      auto c = static_cast<std::int64_t>(op.mean.size());
      step.mean = at::tensor(op.mean, at::kFloat).view({1, c, 1, 1});
      step.std = at::tensor(op.std, at::kFloat).view({1, c, 1, 1});
    } else if (op.op == "layout") {
      for (char axis : op.to) step.permutation.push_back(static_cast<std::int64_t>(op.from.find(axis)));
    }
    steps_.push_back(std::move(step));
  }
}

namespace {

at::Tensor apply(const at::Tensor& x, const PreprocessOp& op, const at::Tensor& mean, const at::Tensor& std,
                 const std::vector<std::int64_t>& permutation, const TraceRequest& request) {
  auto fail = [&](std::string_view why) -> at::Tensor {
    throw runtime_failure(fmt::format("request {}: preprocessing op '{}' cannot apply to input of shape {}: {}",
                                      request.id, op.op, format_shape(x.sizes().vec()), why));
  };
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
    at::Tensor f = x.is_floating_point() ? x : x.to(at::kFloat);
    if (op.mode == "nearest") return at::upsample_nearest2d(f, op.size);
    return at::upsample_bilinear2d(f, op.size, /*align_corners=*/false);
  }
  if (op.op == "center_crop") {
    if (x.dim() < 2) return fail("expected at least 2 dimensions");
    auto h = x.size(-2), w = x.size(-1);
    if (op.size[0] > h || op.size[1] > w)
      return fail(fmt::format("crop {}x{} is larger than the image {}x{}", op.size[0], op.size[1], h, w));
    return x.narrow(-2, (h - op.size[0]) / 2, op.size[0]).narrow(-1, (w - op.size[1]) / 2, op.size[1]);
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
      x = apply(x, step.op, step.mean, step.std, step.permutation, request);
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      throw runtime_failure(fmt::format("request {}: preprocessing op '{}' failed on input of shape {}: {}",
                                        request.id, step.op.op, format_shape(x.sizes().vec()), torch_error_line(e)));
    }
  }
  return x;
}

}  // namespace inferprof::detail
