#include <ATen/CPUGeneratorImpl.h>
#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <numeric>

#include "image/image.hpp"
#include "inferprof/error.hpp"
#include "pipeline/torch_detail.hpp"

namespace inferprof::detail {

at::ScalarType to_scalar_type(DType d) {
  switch (d) {
    case DType::uint8: return at::kByte;
    case DType::int8: return at::kChar;
    case DType::int16: return at::kShort;
    case DType::int32: return at::kInt;
    case DType::int64: return at::kLong;
    case DType::float16: return at::kHalf;
    case DType::float32: return at::kFloat;
    case DType::float64: return at::kDouble;
    case DType::boolean: return at::kBool;
  }
  return at::kFloat;
}

std::optional<DType> from_scalar_type(at::ScalarType t) {
  switch (t) {
    case at::kByte: return DType::uint8;
    case at::kChar: return DType::int8;
    case at::kShort: return DType::int16;
    case at::kInt: return DType::int32;
    case at::kLong: return DType::int64;
    case at::kHalf: return DType::float16;
    case at::kFloat: return DType::float32;
    case at::kDouble: return DType::float64;
    case at::kBool: return DType::boolean;
    default: return std::nullopt;
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
  throw bad_input(fmt::format("input file '{}': {}", path, what));
}

// Parses "'descr': '<f4', 'fortran_order': False, 'shape': (1, 3, 224, 224), "
std::string header_value(const std::string& header, const std::string& key) {
  auto pos = header.find("'" + key + "'");
  if (pos == std::string::npos) return {};
  pos = header.find(':', pos);
  if (pos == std::string::npos) return {};
  ++pos;
  while (pos < header.size() && header[pos] == ' ') ++pos;
  if (pos >= header.size()) return {};
  char open = header[pos];
  char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
  auto end = header.find(close, pos + 1);
  if (end == std::string::npos) return {};
  return header.substr(pos, end - pos + (close == ',' ? 0 : 1));
}

// An image file's bytes, as they would arrive over the network.
at::Tensor read_image_file(const TraceRequest& request, const std::string& trace_path) {
  const std::string& path = request.input.file;
  auto fail = [&](std::string_view why) {
    throw bad_input(fmt::format("{}: image '{}': {}", request_where(trace_path, request), path, why));
  };
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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

}  // namespace

std::string request_where(const std::string& trace_path, const TraceRequest& request) {
  if (trace_path.empty() || request.line == 0) return fmt::format("request {}", request.id);
  return fmt::format("{}:{}", trace_path, request.line);
}

at::Tensor read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) npy_error(path, fmt::format("cannot open ({})", std::strerror(errno)));
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) npy_error(path, "not a .npy file (bad magic)");
  std::uint32_t header_len = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) npy_error(path, "truncated header");
    header_len = b[0] | (b[1] << 8);
  } else {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) npy_error(path, "truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<std::uint32_t>(b[3]) << 24);
  }
  std::string header(header_len, '\0');
  if (!in.read(header.data(), header_len)) npy_error(path, "truncated header");

  std::string descr = header_value(header, "descr");
  if (header_value(header, "fortran_order").rfind("True", 0) == 0)
    npy_error(path, "Fortran-order arrays are not supported (save with np.ascontiguousarray)");
  static const std::vector<std::pair<std::string, at::ScalarType>> kTypes = {
      {"'|u1'", at::kByte},  {"'<u1'", at::kByte},  {"'|i1'", at::kChar},   {"'<i1'", at::kChar},
      {"'<i2'", at::kShort}, {"'<i4'", at::kInt},   {"'<i8'", at::kLong},   {"'<f2'", at::kHalf},
      {"'<f4'", at::kFloat}, {"'<f8'", at::kDouble}, {"'|b1'", at::kBool}};
  auto type = std::find_if(kTypes.begin(), kTypes.end(), [&](const auto& t) { return t.first == descr; });
  if (type == kTypes.end())
    npy_error(path, fmt::format("unsupported dtype {} (expected little-endian u1, i1, i2, i4, i8, f2, f4, f8 or b1)",
                                descr.empty() ? "(none)" : descr));

  std::vector<std::int64_t> shape;
  std::string dims = header_value(header, "shape");
  if (dims.size() < 2) npy_error(path, "header has no shape");
  std::size_t i = 1;
  while (i < dims.size()) {
    while (i < dims.size() && !std::isdigit(static_cast<unsigned char>(dims[i]))) ++i;
    if (i >= dims.size()) break;
    std::int64_t v = 0;
    while (i < dims.size() && std::isdigit(static_cast<unsigned char>(dims[i]))) v = v * 10 + (dims[i++] - '0');
    shape.push_back(v);
  }
  at::Tensor t = at::empty(shape, at::TensorOptions().dtype(type->second));
  auto bytes = static_cast<std::streamsize>(t.nbytes());
  if (!in.read(static_cast<char*>(t.data_ptr()), bytes))
    npy_error(path, fmt::format("truncated data (expected {} bytes for shape {})", bytes, format_shape(shape)));
  return t;
}

at::Tensor make_input(const TraceRequest& request, const std::vector<std::int64_t>& default_shape,
                      DType default_dtype, const std::string& trace_path) {
  const InputSpec& spec = request.input;
  DType dtype = spec.dtype.value_or(default_dtype);
  auto options = at::TensorOptions().dtype(to_scalar_type(dtype));
  switch (spec.kind) {
    case InputSpec::Kind::seed: {
      const auto& shape = spec.shape.empty() ? default_shape : spec.shape;
      if (shape.empty())
        throw bad_input(fmt::format("request {}: no input shape: give input.shape, [input] shape in the "
                                    "profile, or use a model made by gen-model",
                                    request.id));
      auto gen = at::make_generator<at::CPUGeneratorImpl>(spec.seed);
      switch (dtype) {
        case DType::float16:
        case DType::float32:
        case DType::float64: return at::randn(shape, gen, options);
        case DType::boolean: return at::randint(0, 2, shape, gen, at::TensorOptions().dtype(at::kByte)).to(at::kBool);
        case DType::uint8: return at::randint(0, 256, shape, gen, options);
        default: return at::randint(-100, 100, shape, gen, options);
      }
    }
    case InputSpec::Kind::file: {
      at::Tensor t = read_npy(spec.file);
      if (spec.dtype) t = t.to(options.dtype());
      if (!spec.shape.empty()) {
        auto numel = std::accumulate(spec.shape.begin(), spec.shape.end(), std::int64_t{1}, std::multiplies<>());
        if (numel != t.numel())
          throw bad_input(fmt::format("request {}: input file '{}' has shape {} but the trace says {}", request.id,
                                      spec.file, format_shape(t.sizes().vec()), format_shape(spec.shape)));
        t = t.reshape(spec.shape);
      }
      return t;
    }
    case InputSpec::Kind::data: {
      at::Tensor t = at::tensor(spec.data, at::TensorOptions().dtype(at::kDouble)).to(options.dtype());
      return spec.shape.empty() ? t : t.reshape(spec.shape);
    }
    case InputSpec::Kind::image: return read_image_file(request, trace_path);
    case InputSpec::Kind::image_base64: {
      std::string bytes;
      try {
        bytes = image::decode_base64(spec.base64);
      } catch (const image::DecodeError& e) {
        throw bad_input(fmt::format("{}: input.image_base64: {}", request_where(trace_path, request), e.what));
      }
      at::Tensor t = at::empty({static_cast<std::int64_t>(bytes.size())}, at::kByte);
      if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
      return t;
    }
    case InputSpec::Kind::none: break;
  }
  throw bad_input(fmt::format("request {} has no input", request.id));
}

}  // namespace inferprof::detail
