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

namespace {
void encode_spec(const InputSpec& spec, std::string& enc) {
  // Every variable-length part is length-prefixed, so no two different specs
  // can encode to the same bytes. Only the fields that belong to the spec's
  // kind take part: a stale `data` on a seed spec must not change its key.
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
    case InputSpec::Kind::text_file:
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
    case InputSpec::Kind::text:
      put_u64(enc, spec.text.size());
      enc.append(spec.text);
      break;
  }
  // Only when set, so that the keys of specs without one stay as they were.
  if (spec.range) {
    enc.push_back('R');
    put_u64(enc, static_cast<std::uint64_t>((*spec.range)[0]));
    put_u64(enc, static_cast<std::uint64_t>((*spec.range)[1]));
  }
}
}  // namespace

std::string input_spec_key(const InputSpec& spec) {
  std::string enc;
  enc.reserve(64 + spec.shape.size() * 8 + spec.file.size() + spec.base64.size() + spec.data.size() * 8 +
              spec.text.size());
  encode_spec(spec, enc);
  return fmt::format("h:{:016x}", XXH3_64bits(enc.data(), enc.size()));
}

std::string input_specs_key(const std::vector<InputSpec>& specs, bool named) {
  std::string enc;
  enc.push_back(named ? 'N' : 'L');
  put_u64(enc, specs.size());
  for (const InputSpec& spec : specs) {
    if (named) {
      put_u64(enc, spec.name.size());
      enc.append(spec.name);
    }
    std::string one;
    encode_spec(spec, one);
    put_u64(enc, one.size());
    enc.append(one);
  }
  return fmt::format("h:{:016x}", XXH3_64bits(enc.data(), enc.size()));
}

}  // namespace inferprof
