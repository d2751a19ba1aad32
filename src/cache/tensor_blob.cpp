// The binary tensor value format (cache.hpp). Decoding checks everything a
// corrupted or foreign value could get wrong, so a bad value is a miss and
// never a wrong result.
#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>
#include <limits>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"

namespace inferprof {

namespace {

constexpr char kMagic[4] = {'I', 'P', 'T', 'B'};
constexpr std::uint8_t kVersion = 1;
constexpr std::size_t kHeader = 8;    // magic, version, dtype, rank, reserved
constexpr std::size_t kChecksum = 8;  // trailing XXH3-64
constexpr std::uint8_t kDTypeCount = 9;

void put_u64(std::string& out, std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i)
    b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 8);
}

std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

// numel * elem_size, or nullopt when a dimension is negative or it overflows.
// An empty tensor (a zero dimension) needs 0 bytes whatever its other dims.
std::optional<std::uint64_t> tensor_bytes(const std::int64_t* dims, std::size_t rank, std::size_t elem) {
  bool empty = false;
  for (std::size_t i = 0; i < rank; ++i) {
    if (dims[i] < 0) return std::nullopt;
    if (dims[i] == 0) empty = true;
  }
  if (empty) return 0;
  std::uint64_t n = elem;
  for (std::size_t i = 0; i < rank; ++i) {
    const auto d = static_cast<std::uint64_t>(dims[i]);
    if (n > std::numeric_limits<std::uint64_t>::max() / d) return std::nullopt;
    n *= d;
  }
  return n;
}

bool fail(std::string* why, std::string message) {
  if (why != nullptr) *why = std::move(message);
  return false;
}

}  // namespace

std::string encode_tensor(DType dtype, const std::vector<std::int64_t>& shape, const void* data, std::size_t nbytes) {
  if (shape.size() > kMaxTensorRank) {
    throw runtime_failure(fmt::format("cannot cache a tensor of rank {} (at most {})", shape.size(), kMaxTensorRank));
  }
  const auto expected = tensor_bytes(shape.data(), shape.size(), dtype_size(dtype));
  if (!expected || *expected != nbytes) {
    throw runtime_failure(fmt::format("cannot cache a {} tensor of shape {}: it needs {} bytes, got {}",
                                      dtype_name(dtype), format_shape(shape),
                                      expected ? fmt::to_string(*expected) : "an invalid number of", nbytes));
  }
  std::string out;
  out.reserve(kHeader + 8 * shape.size() + 8 + nbytes + kChecksum);
  out.append(kMagic, 4);
  out.push_back(static_cast<char>(kVersion));
  out.push_back(static_cast<char>(dtype));
  out.push_back(static_cast<char>(shape.size()));
  out.push_back('\0');  // reserved
  for (std::int64_t d : shape)
    put_u64(out, static_cast<std::uint64_t>(d));
  put_u64(out, nbytes);
  if (nbytes != 0) out.append(static_cast<const char*>(data), nbytes);
  put_u64(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

std::optional<TensorView> decode_tensor(std::string_view blob, std::string* why) {
  if (blob.size() < kHeader) {
    fail(why, fmt::format("truncated: {} bytes, shorter than the {}-byte header", blob.size(), kHeader));
    return std::nullopt;
  }
  const char* p = blob.data();
  if (std::memcmp(p, kMagic, 4) != 0) {
    fail(why, "bad magic: not an inferprof tensor blob");
    return std::nullopt;
  }
  const auto version = static_cast<std::uint8_t>(p[4]);
  const auto dtype_code = static_cast<std::uint8_t>(p[5]);
  const auto rank = static_cast<std::uint8_t>(p[6]);
  const auto reserved = static_cast<std::uint8_t>(p[7]);
  if (version != kVersion || reserved != 0) {
    fail(why, fmt::format("unsupported version {}.{} (expected {}.0)", version, reserved, kVersion));
    return std::nullopt;
  }
  if (dtype_code >= kDTypeCount) {
    fail(why, fmt::format("unknown dtype code {}", dtype_code));
    return std::nullopt;
  }
  if (rank > kMaxTensorRank) {
    fail(why, fmt::format("rank {} exceeds {}", rank, kMaxTensorRank));
    return std::nullopt;
  }
  const std::size_t fixed = kHeader + 8 * std::size_t{rank} + 8;  // through the byte count
  if (blob.size() < fixed + kChecksum) {
    fail(why,
         fmt::format("truncated: {} bytes, a rank-{} blob needs at least {}", blob.size(), rank, fixed + kChecksum));
    return std::nullopt;
  }
  TensorView view;
  view.dtype = static_cast<DType>(dtype_code);
  view.shape.resize(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    view.shape[i] = static_cast<std::int64_t>(get_u64(p + kHeader + 8 * i));
  }
  const std::uint64_t nbytes = get_u64(p + fixed - 8);
  const auto expected = tensor_bytes(view.shape.data(), rank, dtype_size(view.dtype));
  if (!expected || *expected != nbytes) {
    fail(why,
         fmt::format("size mismatch: a {} tensor of shape {} needs {} bytes, the blob says {}", dtype_name(view.dtype),
                     format_shape(view.shape), expected ? fmt::to_string(*expected) : "an invalid number of", nbytes));
    return std::nullopt;
  }
  const std::size_t available = blob.size() - fixed - kChecksum;
  if (nbytes != available) {
    fail(why, fmt::format("{}: the blob holds {} data bytes, its header says {}",
                          nbytes > available ? "truncated" : "trailing bytes", available, nbytes));
    return std::nullopt;
  }
  const std::size_t body = fixed + static_cast<std::size_t>(nbytes);
  const std::uint64_t stored = get_u64(p + body);
  const std::uint64_t actual = XXH3_64bits(p, body);
  if (stored != actual) {
    fail(why, fmt::format("checksum mismatch: stored {:016x}, computed {:016x}", stored, actual));
    return std::nullopt;
  }
  view.bytes = blob.substr(fixed, static_cast<std::size_t>(nbytes));
  return view;
}

namespace {

constexpr char kSetMagic[4] = {'I', 'P', 'T', 'S'};
constexpr std::uint8_t kSetVersion = 1;
constexpr std::size_t kSetHeader = 16;

std::size_t padded8(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out.push_back(static_cast<char>(v >> (8 * i)));
}

std::uint32_t get_u32(const char* p) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<std::uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

std::string encode_tensors(TensorSet::Kind kind, const std::vector<TensorPart>& parts) {
  if (kind == TensorSet::Kind::single) {
    if (parts.size() != 1)
      throw runtime_failure(fmt::format("a single-tensor value needs 1 tensor, got {}", parts.size()));
    return encode_tensor(parts[0].dtype, parts[0].shape, parts[0].data, parts[0].nbytes);
  }
  if (parts.size() > kMaxTensorSetSize)
    throw runtime_failure(
        fmt::format("cannot cache {} tensors in one value (at most {})", parts.size(), kMaxTensorSetSize));
  std::string out;
  out.append(kSetMagic, 4);
  out.push_back(static_cast<char>(kSetVersion));
  out.push_back(static_cast<char>(kind));
  out.append(2, '\0');
  put_u32(out, static_cast<std::uint32_t>(parts.size()));
  put_u32(out, 0);
  for (const TensorPart& part : parts) {
    if (part.name.size() > kMaxTensorNameBytes)
      throw runtime_failure(
          fmt::format("cannot cache a tensor named with {} bytes (at most {})", part.name.size(), kMaxTensorNameBytes));
    put_u64(out, part.name.size());
    out.append(part.name);
    out.append(padded8(part.name.size()) - part.name.size(), '\0');
    const std::string blob = encode_tensor(part.dtype, part.shape, part.data, part.nbytes);
    put_u64(out, blob.size());
    out.append(blob);
    out.append(padded8(blob.size()) - blob.size(), '\0');
  }
  put_u64(out, XXH3_64bits(out.data(), out.size()));
  return out;
}

std::optional<TensorSet> decode_tensors(std::string_view blob, std::string* why) {
  if (blob.size() >= 4 && std::memcmp(blob.data(), kMagic, 4) == 0) {
    auto one = decode_tensor(blob, why);
    if (!one) return std::nullopt;
    TensorSet set;
    set.names.emplace_back();
    set.tensors.push_back(std::move(*one));
    return set;
  }
  if (blob.size() < kSetHeader + kChecksum) {
    fail(why, fmt::format("truncated: {} bytes, shorter than a tensor set's header", blob.size()));
    return std::nullopt;
  }
  const char* p = blob.data();
  if (std::memcmp(p, kSetMagic, 4) != 0) {
    fail(why, "bad magic: not an inferprof tensor blob");
    return std::nullopt;
  }
  const auto version = static_cast<std::uint8_t>(p[4]);
  const auto kind = static_cast<std::uint8_t>(p[5]);
  if (version != kSetVersion || p[6] != 0 || p[7] != 0 || get_u32(p + 12) != 0) {
    fail(why, fmt::format("unsupported tensor set version {} (expected {})", version, kSetVersion));
    return std::nullopt;
  }
  if (kind == static_cast<std::uint8_t>(TensorSet::Kind::single) ||
      kind > static_cast<std::uint8_t>(TensorSet::Kind::dict)) {
    fail(why, fmt::format("unknown tensor set kind {}", kind));
    return std::nullopt;
  }
  const std::uint32_t count = get_u32(p + 8);
  if (count > kMaxTensorSetSize) {
    fail(why, fmt::format("{} tensors exceed {}", count, kMaxTensorSetSize));
    return std::nullopt;
  }
  // The checksum first: what follows then reads bytes the writer wrote.
  const std::size_t body = blob.size() - kChecksum;
  const std::uint64_t stored = get_u64(p + body);
  const std::uint64_t actual = XXH3_64bits(p, body);
  if (stored != actual) {
    fail(why, fmt::format("checksum mismatch: stored {:016x}, computed {:016x}", stored, actual));
    return std::nullopt;
  }
  TensorSet set;
  set.kind = static_cast<TensorSet::Kind>(kind);
  std::size_t at = kSetHeader;
  // Reads a length-prefixed, 8-padded field; false when it overruns the body.
  const auto field = [&](std::uint64_t limit, std::string_view& out) {
    if (body - at < 8) return false;
    const std::uint64_t n = get_u64(p + at);
    at += 8;
    if (n > limit || n > body - at || padded8(static_cast<std::size_t>(n)) > body - at) return false;
    out = std::string_view(p + at, static_cast<std::size_t>(n));
    at += padded8(static_cast<std::size_t>(n));
    return true;
  };
  for (std::uint32_t i = 0; i < count; ++i) {
    std::string_view name, tensor;
    if (!field(kMaxTensorNameBytes, name) || !field(body, tensor)) {
      fail(why, fmt::format("truncated: tensor {} of {} overruns the value", i + 1, count));
      return std::nullopt;
    }
    std::string inner;
    auto view = decode_tensor(tensor, &inner);
    if (!view) {
      fail(why, fmt::format("tensor {} of {}: {}", i + 1, count, inner));
      return std::nullopt;
    }
    set.names.emplace_back(name);
    set.tensors.push_back(std::move(*view));
  }
  if (at != body) {
    fail(why, fmt::format("trailing bytes: {} after the last tensor", body - at));
    return std::nullopt;
  }
  return set;
}

}  // namespace inferprof
