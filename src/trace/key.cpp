#include <fmt/format.h>
#include <xxhash.h>

#include <cstring>

#include "inferprof/trace.hpp"

namespace inferprof {

namespace {

// Explicit little-endian bytes rather than memcpy of host integers: the key
// names cached results that replicas share through Redis, so it must not
// depend on the host's byte order.
void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

}  // namespace

std::string input_spec_key(const InputSpec& spec) {
  // Every variable-length part is length-prefixed, so no two different specs
  // can encode to the same bytes. Only the fields that belong to the spec's
  // kind take part: a stale `data` on a seed spec must not change its key.
  std::string enc;
  enc.reserve(64 + spec.shape.size() * 8 + spec.file.size() + spec.base64.size() + spec.data.size() * 8);
  enc.push_back('I');  // encoding version, bumped if the layout changes
  enc.push_back(static_cast<char>(spec.kind));
  put_u64(enc, spec.shape.size());
  for (std::int64_t d : spec.shape)
    put_u64(enc, static_cast<std::uint64_t>(d));
  enc.push_back(spec.dtype ? static_cast<char>(*spec.dtype) : '\xFF');
  switch (spec.kind) {
    case InputSpec::Kind::none:
      break;
    case InputSpec::Kind::seed:
      put_u64(enc, spec.seed);
      break;
    case InputSpec::Kind::file:
    case InputSpec::Kind::image:
      put_u64(enc, spec.file.size());
      enc.append(spec.file);
      break;
    case InputSpec::Kind::data:
      put_u64(enc, spec.data.size());
      // Bit patterns, not values: 0.0 and -0.0 are different inputs to a model.
      for (double v : spec.data) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, sizeof bits);
        put_u64(enc, bits);
      }
      break;
    case InputSpec::Kind::image_base64:
      put_u64(enc, spec.base64.size());
      enc.append(spec.base64);
      break;
  }
  return fmt::format("h:{:016x}", XXH3_64bits(enc.data(), enc.size()));
}

}  // namespace inferprof
