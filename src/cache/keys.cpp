// Cache keys and tier specs: what identifies a cached value, and how a tier's
// policy and limits are written on the command line.
#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

#include "cache/spec_check.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"

namespace inferprof {

namespace {

// Domain tags: an L2 result and an L3 preprocessed tensor may share one Redis
// namespace, so the same two strings must not give the same key in both roles.
constexpr char kResultDomain = 'R';
constexpr char kPreprocessedDomain = 'P';

void put_u64le(unsigned char* out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<unsigned char>(v >> (8 * i));
}

// XXH3-128 of: tag | u64 len(a) | a | u64 len(b) | b. The length prefixes make
// ("ab", "c") and ("a", "bc") different keys.
CacheKey hash_parts(char domain, std::string_view a, std::string_view b) {
  const std::size_t total = 1 + 8 + a.size() + 8 + b.size();
  XXH128_hash_t h;
  // Keys are short (a version and a content hash): one stack buffer and the
  // one-shot hash; the streaming state is only for unusually long parts.
  constexpr std::size_t kStack = 256;
  if (total <= kStack) {
    std::array<unsigned char, kStack> buf;
    unsigned char* p = buf.data();
    *p++ = static_cast<unsigned char>(domain);
    put_u64le(p, a.size());
    p += 8;
    if (!a.empty()) std::memcpy(p, a.data(), a.size());
    p += a.size();
    put_u64le(p, b.size());
    p += 8;
    if (!b.empty()) std::memcpy(p, b.data(), b.size());
    h = XXH3_128bits(buf.data(), total);
  } else {
    XXH3_state_t* state = XXH3_createState();
    if (state == nullptr) throw std::bad_alloc();
    unsigned char len[8];
    XXH3_128bits_reset(state);
    XXH3_128bits_update(state, &domain, 1);
    put_u64le(len, a.size());
    XXH3_128bits_update(state, len, 8);
    XXH3_128bits_update(state, a.data(), a.size());
    put_u64le(len, b.size());
    XXH3_128bits_update(state, len, 8);
    XXH3_128bits_update(state, b.data(), b.size());
    h = XXH3_128bits_digest(state);
    XXH3_freeState(state);
  }
  return CacheKey{h.high64, h.low64};
}

std::uint32_t tag_of(std::string_view model_version) {
  return static_cast<std::uint32_t>(XXH3_64bits(model_version.data(), model_version.size()) >> 32);
}

constexpr std::string_view kGrammarHint = "expected POLICY:CAPACITY[:TTL], e.g. lru:10000, lfu:64MB, ttl:10000:30s";

// Largest accepted TTL: keeps ttl * 1e9 well inside Nanos.
constexpr std::uint64_t kMaxTtlSecondsInt = 1'000'000'000;
constexpr double kMaxTtlSeconds = static_cast<double>(kMaxTtlSecondsInt);

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Digits only; nullopt on overflow.
std::optional<std::uint64_t> parse_u64(std::string_view s) {
  if (!all_digits(s)) return std::nullopt;
  std::uint64_t v = 0;
  for (char c : s) {
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

char lower(char c) {
  return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Splits "64MB" into "64" and "MB" at the first character that is not a
// digit (or '.', for TTLs).
std::pair<std::string_view, std::string_view> split_number(std::string_view s, bool allow_dot) {
  std::size_t i = 0;
  while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || (allow_dot && s[i] == '.')))
    ++i;
  return {s.substr(0, i), s.substr(i)};
}

// A byte unit's multiplier, or 0 when `unit` is not one.
std::uint64_t byte_unit(std::string_view unit) {
  struct Unit {
    std::string_view a, b;
    std::uint64_t mult;
  };
  static constexpr Unit kUnits[] = {
      {"b", "b", 1},
      {"kb", "kib", 1ull << 10},
      {"mb", "mib", 1ull << 20},
      {"gb", "gib", 1ull << 30},
      {"tb", "tib", 1ull << 40},
  };
  for (const auto& u : kUnits) {
    if (iequals(unit, u.a) || iequals(unit, u.b)) return u.mult;
  }
  return 0;
}

}  // namespace

CacheKey result_key(std::string_view model_version, std::string_view input_key) {
  CacheKey k = hash_parts(kResultDomain, model_version, input_key);
  k.hi = (static_cast<std::uint64_t>(tag_of(model_version)) << 32) | (k.hi & 0xFFFFFFFFull);
  return k;
}

std::uint32_t version_tag(std::string_view model_version) {
  return tag_of(model_version);
}

CacheKey preprocessed_key(std::string_view preprocess_fingerprint, std::string_view input_key) {
  return hash_parts(kPreprocessedDomain, preprocess_fingerprint, input_key);
}

std::string to_hex(const CacheKey& key) {
  return fmt::format("{:016x}{:016x}", key.hi, key.lo);
}

std::optional<double> parse_ttl_s(std::string_view text) {
  const auto [number, unit] = split_number(text, true);
  if (number.empty() || number.front() == '.' || number.back() == '.' || number.find('.') != number.rfind('.')) {
    return std::nullopt;
  }
  double scale = 0;
  if (unit == "ms") {
    scale = 1e-3;
  } else if (unit == "s") {
    scale = 1;
  } else if (unit == "m") {
    scale = 60;
  } else if (unit == "h") {
    scale = 3600;
  } else {
    return std::nullopt;
  }
  // Digits and at most one inner dot: strtod cannot fail or read past it.
  const std::string digits(number);
  const double v = std::strtod(digits.c_str(), nullptr) * scale;
  if (!(v > 0) || v > kMaxTtlSeconds) return std::nullopt;
  return v;
}

bool is_zero_ttl(std::string_view text) {
  const auto [number, unit] = split_number(text, true);
  if (number.empty() || (unit != "ms" && unit != "s" && unit != "m" && unit != "h")) return false;
  return number.find_first_not_of("0.") == std::string_view::npos && number.find('0') != std::string_view::npos;
}

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  const auto [number, unit] = split_number(text, false);
  const std::uint64_t mult = byte_unit(unit);
  const auto n = parse_u64(number);
  if (mult == 0 || !n || *n == 0) return std::nullopt;
  if (*n > std::numeric_limits<std::uint64_t>::max() / mult) return std::nullopt;
  return *n * mult;
}

void cache_detail::check_policy_limits(const TierSpec& spec, std::string_view what) {
  if (!std::isfinite(spec.ttl_s) || spec.ttl_s < 0 || spec.ttl_s > kMaxTtlSeconds) {
    throw bad_input(
        fmt::format("{}: time to live must be between 0 and {} s, got {}", what, kMaxTtlSecondsInt, spec.ttl_s));
  }
  if (spec.policy == Policy::ttl && spec.ttl_s <= 0) {
    throw bad_input(fmt::format("{}: policy ttl needs a time to live, e.g. ttl:10000:30s", what));
  }
}

void validate_tier_spec(const TierSpec& spec, std::string_view what) {
  cache_detail::check_policy_limits(spec, what);
}

TierSpec parse_tier_spec(std::string_view tier, std::string_view spec, std::string_view what) {
  TierSpec out;
  const std::optional<CacheLevel> level = parse_enum<CacheLevel>(tier);
  if (!level)
    throw bad_input(fmt::format("{}: unknown tier '{}' (expected {})", what, tier, enum_choices<CacheLevel>()));
  out.tier = *level;

  // POLICY ":" CAPACITY [ ":" TTL ]
  std::string_view fields[3];
  std::size_t nfields = 0;
  std::string_view rest = spec;
  while (true) {
    const std::size_t colon = rest.find(':');
    if (nfields == 3) throw bad_input(fmt::format("{}: {}", what, kGrammarHint));
    fields[nfields++] = rest.substr(0, colon);
    if (colon == std::string_view::npos) break;
    rest = rest.substr(colon + 1);
  }
  if (nfields < 2) throw bad_input(fmt::format("{}: {}", what, kGrammarHint));

  out.policy = parse_policy_spec(fields[0], out.params, what);

  // CAPACITY := LIMIT [ "," LIMIT ]
  std::string_view limits[2];
  std::size_t nlimits = 0;
  std::string_view cap = fields[1];
  while (true) {
    const std::size_t comma = cap.find(',');
    if (nlimits == 2) throw bad_input(fmt::format("{}: {}", what, kGrammarHint));
    limits[nlimits++] = cap.substr(0, comma);
    if (comma == std::string_view::npos) break;
    cap = cap.substr(comma + 1);
  }
  bool have_count = false, have_bytes = false;
  for (std::size_t i = 0; i < nlimits; ++i) {
    const std::string_view limit = limits[i];
    const auto [number, unit] = split_number(limit, false);
    if (number.empty()) throw bad_input(fmt::format("{}: {}", what, kGrammarHint));
    if (unit.empty()) {
      const auto n = parse_u64(number);
      if (!n) throw bad_input(fmt::format("{}: capacity '{}' is too large", what, limit));
      if (*n == 0) throw bad_input(fmt::format("{}: capacity must be greater than 0", what));
      if (have_count) {
        throw bad_input(
            fmt::format("{}: two entry counts; give at most one count and one size, e.g. lru:10000,64MB", what));
      }
      have_count = true;
      out.max_entries = *n;
    } else {
      if (byte_unit(unit) == 0) throw bad_input(fmt::format("{}: {}", what, kGrammarHint));
      const auto n = parse_u64(number);
      if (n && *n == 0) throw bad_input(fmt::format("{}: capacity must be greater than 0", what));
      const auto bytes = parse_byte_size(limit);
      if (!bytes) throw bad_input(fmt::format("{}: capacity '{}' is too large", what, limit));
      if (have_bytes) {
        throw bad_input(
            fmt::format("{}: two byte sizes; give at most one count and one size, e.g. lru:10000,64MB", what));
      }
      have_bytes = true;
      out.max_bytes = *bytes;
    }
  }

  if (nfields == 3) {
    const auto ttl = parse_ttl_s(fields[2]);
    if (!ttl && is_zero_ttl(fields[2]))
      throw bad_input(fmt::format(
          "{}: time to live must be above 0, got '{}' (leave ':TTL' out and entries never expire)", what, fields[2]));
    if (!ttl) {
      throw bad_input(fmt::format("{}: bad time to live '{}': expected a number and a unit ms, s, m or h, e.g. 30s",
                                  what, fields[2]));
    }
    out.ttl_s = *ttl;
  } else if (out.policy == Policy::ttl) {
    throw bad_input(fmt::format("{}: policy ttl needs a time to live, e.g. ttl:10000:30s", what));
  }
  return out;
}

}  // namespace inferprof
