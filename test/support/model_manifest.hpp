#pragma once
// The model store's Redis tier as a test sees it from outside: the key of a
// model's manifest or chunk, and a forged manifest in the tier's format
// (src/store/redis_model_tier.cpp), written here again so that a test does not
// trust the code it tests.
#include <fmt/format.h>
#include <xxhash.h>

#include <cstdint>
#include <string>

namespace inferprof::testing {

// "inferprof:NS:<XXH3-128 of MODEL \0 PART, 32 hex digits>"; PART is
// "manifest" or "chunk N".
inline std::string redis_key(const std::string& model, const std::string& part, const std::string& ns = "models") {
  const std::string text = model + '\0' + part;
  const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
  return fmt::format("inferprof:{}:{:016x}{:016x}", ns, h.high64, h.low64);
}

// A manifest with a valid checksum that claims `size` bytes in one chunk of
// 16 stored bytes: what a poisoned Redis could hold.
inline std::string forged_manifest(std::uint64_t size, const std::string& sha256) {
  auto le = [](std::string& out, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  };
  std::string m = "IPMM";
  m += '\x01';
  m.append(3, '\0');  // flags (no zstd), reserved
  le(m, size, 8);
  le(m, size, 8);  // the chunk size: all of it in one chunk
  le(m, 1, 4);
  le(m, 0, 4);
  m += sha256;
  le(m, 16, 8);  // chunk 0: its stored length and XXH3-64
  le(m, 0, 8);
  le(m, XXH3_64bits(m.data(), m.size()), 8);
  return m;
}

}  // namespace inferprof::testing
