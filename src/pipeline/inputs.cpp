#include <ATen/CPUGeneratorImpl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "image/image.hpp"
#include "inferprof/error.hpp"
#include "inferprof/npy.hpp"
#include "inferprof/printable.hpp"
#include "pipeline/torch_detail.hpp"

namespace inferprof::detail {

at::ScalarType to_scalar_type(DType d) {
  switch (d) {
    case DType::uint8:
      return at::kByte;
    case DType::int8:
      return at::kChar;
    case DType::int16:
      return at::kShort;
    case DType::int32:
      return at::kInt;
    case DType::int64:
      return at::kLong;
    case DType::float16:
      return at::kHalf;
    case DType::float32:
      return at::kFloat;
    case DType::float64:
      return at::kDouble;
    case DType::boolean:
      return at::kBool;
  }
  return at::kFloat;
}

std::optional<DType> from_scalar_type(at::ScalarType t) {
  switch (t) {
    case at::kByte:
      return DType::uint8;
    case at::kChar:
      return DType::int8;
    case at::kShort:
      return DType::int16;
    case at::kInt:
      return DType::int32;
    case at::kLong:
      return DType::int64;
    case at::kHalf:
      return DType::float16;
    case at::kFloat:
      return DType::float32;
    case at::kDouble:
      return DType::float64;
    case at::kBool:
      return DType::boolean;
    default:
      return std::nullopt;
  }
}

std::string torch_error_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  // TorchScript errors end with "RuntimeError: <what>" after two tracebacks.
  if (auto pos = text.rfind("RuntimeError: "); pos != std::string::npos)
    text = text.substr(pos + std::strlen("RuntimeError: "));
  auto first = text.find_first_not_of(" \n");
  if (first == std::string::npos) return "unknown libtorch error";
  text = text.substr(first);
  if (auto nl = text.find('\n'); nl != std::string::npos) text.resize(nl);
  return text;
}

namespace {

[[noreturn]] void npy_error(const std::string& path, std::string_view what) {
  throw bad_input(fmt::format("input file '{}': {}", printable(path), what));
}

// Reads exactly `size` bytes at `offset`; false at end of file.
bool read_at(int fd, char* out, std::uint64_t size, std::uint64_t offset) {
  while (size > 0) {
    const ssize_t got =
        ::pread(fd, out, static_cast<std::size_t>(std::min<std::uint64_t>(size, 1 << 30)), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    size -= static_cast<std::uint64_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
  return true;
}

// An image or text file's bytes, as they would arrive over the network.
at::Tensor read_payload_file(const TraceRequest& request, const InputSpec& spec, const std::string& trace_path) {
  const std::string& path = spec.file;
  auto fail = [&](std::string_view why) {
    throw bad_input(fmt::format("{}: {} '{}': {}", request_where(trace_path, request),
                                spec.kind == InputSpec::Kind::image ? "image" : "text file", printable(path), why));
  };
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer (forever); fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(fmt::format("cannot open ({})", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail(fmt::format("cannot read ({})", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) fail("not a regular file");
  at::Tensor bytes = at::empty({static_cast<std::int64_t>(st.st_size)}, at::kByte);
  auto* out = static_cast<char*>(bytes.data_ptr());
  std::size_t done = 0;
  const auto size = static_cast<std::size_t>(st.st_size);
  while (done < size) {
    const ssize_t got = ::read(fd, out + done, size - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) fail(fmt::format("cannot read ({})", std::strerror(errno)));
    if (got == 0) fail("the file shrank while it was read");
    done += static_cast<std::size_t>(got);
  }
  return bytes;
}

at::Tensor bytes_tensor(std::string_view bytes) {
  at::Tensor t = at::empty({static_cast<std::int64_t>(bytes.size())}, at::kByte);
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  return t;
}

bool is_integral(DType d) {
  return d != DType::float16 && d != DType::float32 && d != DType::float64 && d != DType::boolean;
}

}  // namespace

std::string request_where(const std::string& trace_path, const TraceRequest& request) {
  if (trace_path.empty() || request.line == 0) return fmt::format("request {}", request.id);
  return fmt::format("{}:{}", trace_path, request.line);
}

at::Tensor read_npy(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // as read_payload_file: no FIFO wait
  if (fd < 0) npy_error(path, fmt::format("cannot open ({})", std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) npy_error(path, fmt::format("cannot read ({})", std::strerror(errno)));
  // A FIFO or a device would be read without end.
  if (!S_ISREG(st.st_mode)) npy_error(path, "not a regular file");
  const auto file_size = static_cast<std::uint64_t>(st.st_size);
  // The header is parsed and its sizes checked against the file before any
  // allocation that depends on them.
  std::string head(static_cast<std::size_t>(std::min(file_size, kNpyMaxPrefixBytes)), '\0');
  if (!read_at(fd, head.data(), head.size(), 0)) npy_error(path, "truncated header");
  NpyHeader h;
  try {
    h = parse_npy_header(head, file_size);
  } catch (const Error& e) {
    npy_error(path, e.what());
  }
  at::Tensor t = at::empty(h.shape, at::TensorOptions().dtype(to_scalar_type(h.dtype)));
  if (!read_at(fd, static_cast<char*>(t.data_ptr()), h.data_bytes, h.data_offset))
    npy_error(path,
              fmt::format("truncated data (expected {} bytes for shape {})", h.data_bytes, format_shape(h.shape)));
  return t;
}

at::Tensor make_input(const TraceRequest& request, const std::vector<std::int64_t>& default_shape, DType default_dtype,
                      const std::string& trace_path) {
  return make_input(request, request.input, default_shape, default_dtype, trace_path);
}

Inputs make_inputs(const TraceRequest& request, const std::vector<std::int64_t>& default_shape, DType default_dtype,
                   const std::string& trace_path) {
  Inputs x;
  if (request.inputs.empty()) {
    x.tensors.push_back(make_input(request, request.input, default_shape, default_dtype, trace_path));
    x.specs.push_back(&request.input);
    return x;
  }
  // The profile's and the model's defaults describe one input; several give
  // their own shapes (or are images or text).
  for (const InputSpec& spec : request.inputs) {
    x.tensors.push_back(make_input(request, spec, {}, default_dtype, trace_path));
    x.specs.push_back(&spec);
    if (request.inputs_named) x.names.push_back(spec.name);
  }
  return x;
}

at::Tensor make_input(const TraceRequest& request, const InputSpec& spec,
                      const std::vector<std::int64_t>& default_shape, DType default_dtype,
                      const std::string& trace_path) {
  DType dtype = spec.dtype.value_or(default_dtype);
  auto options = at::TensorOptions().dtype(to_scalar_type(dtype));
  switch (spec.kind) {
    case InputSpec::Kind::seed: {
      const auto& shape = spec.shape.empty() ? default_shape : spec.shape;
      if (shape.empty())
        throw bad_input(
            request.inputs.empty()
                ? fmt::format("request {}: no input shape: give input.shape, [input] shape in the "
                              "profile, or use a model made by gen-model",
                              request.id)
                : fmt::format("{}: a seed among 'inputs' needs its own shape", request_where(trace_path, request)));
      auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed);
      if (spec.range) {
        const auto [low, high] = *spec.range;
        if (is_integral(dtype)) return at::randint(low, high, shape, gen, options);
        if (dtype == DType::boolean)
          return at::randint(std::max<std::int64_t>(low, 0), std::min<std::int64_t>(high, 2), shape, gen,
                             at::TensorOptions().dtype(at::kByte))
              .to(at::kBool);
        return at::empty(shape, options).uniform_(static_cast<double>(low), static_cast<double>(high), gen);
      }
      switch (dtype) {
        case DType::float16:
        case DType::float32:
        case DType::float64:
          return at::randn(shape, gen, options);
        case DType::boolean:
          return at::randint(0, 2, shape, gen, at::TensorOptions().dtype(at::kByte)).to(at::kBool);
        case DType::uint8:
          return at::randint(0, 256, shape, gen, options);
        default:
          return at::randint(-100, 100, shape, gen, options);
      }
    }
    case InputSpec::Kind::file: {
      at::Tensor t;
      try {
        t = read_npy(spec.file);
      } catch (const Error& e) {  // which request (its trace line) named the file
        throw Error(e.code(), fmt::format("{}: {}", request_where(trace_path, request), e.what()));
      }
      if (spec.dtype) t = t.to(options.dtype());
      if (!spec.shape.empty()) {
        const std::optional<std::int64_t> numel = checked_element_count(spec.shape);
        if (numel != t.numel())
          throw bad_input(fmt::format("{}: input file '{}' has shape {} but the trace says {}",
                                      request_where(trace_path, request), printable(spec.file),
                                      format_shape(t.sizes().vec()), format_shape(spec.shape)));
        t = t.reshape(spec.shape);
      }
      return t;
    }
    case InputSpec::Kind::data: {
      at::Tensor t = at::tensor(spec.data, at::TensorOptions().dtype(at::kDouble)).to(options.dtype());
      return spec.shape.empty() ? t : t.reshape(spec.shape);
    }
    case InputSpec::Kind::image:
    case InputSpec::Kind::text_file:
      return read_payload_file(request, spec, trace_path);
    case InputSpec::Kind::text:
      return bytes_tensor(spec.text);
    case InputSpec::Kind::image_base64: {
      std::string bytes;
      try {
        bytes = image::decode_base64(spec.base64);
      } catch (const image::DecodeError& e) {
        throw bad_input(fmt::format("{}: input.image_base64: {}", request_where(trace_path, request), e.what));
      }
      return bytes_tensor(bytes);
    }
    case InputSpec::Kind::none:
      break;
  }
  throw bad_input(fmt::format("request {} has no input", request.id));
}

}  // namespace inferprof::detail
