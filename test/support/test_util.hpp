#pragma once
// Small helpers the unit tests share: reproducible bytes, the message and
// exit code of an inferprof::Error, and skipping where redis-server is absent.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <exception>
#include <random>
#include <string>
#include <utility>

#include "inferprof/error.hpp"
#include "redis_server.hpp"

namespace inferprof::testing {

inline std::string random_bytes(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s)
    c = static_cast<char>(rng() & 0xff);
  return s;
}

// The message and exit code of the inferprof::Error `fn` throws.
template <class Fn>
std::pair<std::string, int> error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.what(), e.exit_code()};
  } catch (const std::exception& e) {
    return {std::string("not an inferprof::Error: ") + e.what(), -1};
  }
  return {"nothing thrown", 0};
}

}  // namespace inferprof::testing

// Skips the test (printing why) where redis-server is missing, unless
// INFERPROF_REQUIRE_REDIS says it must be there.
#define REQUIRE_REDIS_SERVER()                                                                                       \
  do {                                                                                                               \
    if (!::inferprof::testing::RedisServer::available()) {                                                           \
      if (::inferprof::testing::RedisServer::required()) FAIL(::inferprof::testing::RedisServer::why_unavailable()); \
      MESSAGE(::inferprof::testing::RedisServer::why_unavailable());                                                 \
      return;                                                                                                        \
    }                                                                                                                \
    ::unsetenv("INFERPROF_REDIS_PASSWORD");                                                                          \
  } while (0)
