// The remote backends of the cache tiers, against the real thing: a
// redis-server started per test on a free loopback port, and LMDB folders
// under /tmp.
#include <doctest/doctest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

using namespace inferprof;
using inferprof::testing::error_of;
using inferprof::testing::random_bytes;
using inferprof::testing::RedisServer;
using inferprof::testing::TempDir;

namespace {

CacheKey key(std::uint64_t i, std::uint64_t salt = 0x5eed) {
  return CacheKey{salt * 0x9E3779B97F4A7C15ull + i, ~i};
}

template <class Fn>
std::string backend_error_of(Fn&& fn) {
  try {
    fn();
  } catch (const BackendError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("not a BackendError: ") + e.what();
  }
  return "nothing thrown";
}

struct ScopedEnv {
  ScopedEnv(const char* name, const std::string& value) : name_(name) { ::setenv(name, value.c_str(), 1); }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  const char* name_;
};

const char* const kUrlForms = "expected redis://[:password@]host:port[/db] or unix:///path.sock";

}  // namespace

TEST_SUITE("cache backends") {
  // ---- Redis -------------------------------------------------------------

  TEST_CASE("redis: binary values round-trip under inferprof:<ns>:<hex>") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto b = make_redis_backend(server.url(), "rt");
    CHECK(b->describe() == "redis " + server.url() + " (keys inferprof:rt:*)");

    CHECK_FALSE(b->get(key(1)).has_value());
    std::string value = std::string("a\0b\0\xff\r\n", 7) + random_bytes(100 * 1024, 1);
    b->put(key(1), value, 0);
    auto got = b->get(key(1));
    REQUIRE(got.has_value());
    CHECK(got->size() == value.size());
    CHECK(*got == value);
    CHECK(server.integer("EXISTS inferprof:rt:" + to_hex(key(1))) == 1);
    // No expiry asked: the key still expires, an hour after its last write,
    // so a run killed before it could clear its namespace leaves nothing for good.
    const long long ttl = server.integer("TTL inferprof:rt:" + to_hex(key(1)));
    CHECK(ttl > 3590);
    CHECK(ttl <= 3600);

    b->put(key(1), "second", 0);  // overwrite
    CHECK(b->get(key(1)) == std::optional<std::string>("second"));
    b->put(key(2), "", 0);  // empty values are values
    CHECK(b->get(key(2)) == std::optional<std::string>(""));
  }

  TEST_CASE("redis: a unix socket and a database number") {
    REQUIRE_REDIS_SERVER();
    TempDir dir;
    std::string sock = dir.file("redis.sock");
    RedisServer server("", 0, sock);
    auto b = make_redis_backend("unix://" + sock + "?db=3", "u");
    CHECK(b->describe() == "redis unix://" + sock + "?db=3 (keys inferprof:u:*)");
    b->put(key(7), "via the socket", 0);
    CHECK(b->get(key(7)) == std::optional<std::string>("via the socket"));
    CHECK(server.integer("DBSIZE") == 0);  // db 0 stays empty
    auto tcp = make_redis_backend(server.url(3), "u");
    CHECK(tcp->get(key(7)) == std::optional<std::string>("via the socket"));
    // The port may be left out; a URL without /db means db 0.
    CHECK(make_redis_backend("redis://127.0.0.1:" + std::to_string(server.port()), "u")->entries() == 0);
  }

  TEST_CASE("redis: values expire after their TTL") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto b = make_redis_backend(server.url(), "ttl");
    b->put(key(1), "short", 0.25);  // sub-second: PX 250
    b->put(key(2), "whole", 1);     // whole seconds: EX 1
    long long pttl = server.integer("PTTL inferprof:ttl:" + to_hex(key(1)));
    CHECK(pttl > 0);
    CHECK(pttl <= 250);
    CHECK(server.integer("TTL inferprof:ttl:" + to_hex(key(2))) == 1);
    CHECK(b->get(key(1)) == std::optional<std::string>("short"));
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    CHECK_FALSE(b->get(key(1)).has_value());
    CHECK(b->get(key(2)) == std::optional<std::string>("whole"));
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    CHECK_FALSE(b->get(key(2)).has_value());
    CHECK(b->entries() == 0);
  }

  TEST_CASE("redis: namespaces isolate - clear() removes only its own - entries() and bytes()") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto a = make_redis_backend(server.url(), "alpha");
    auto b = make_redis_backend(server.url(), "beta");
    // A namespace with glob characters must not match its neighbours in SCAN.
    auto star = make_redis_backend(server.url(), "al*");
    a->put(key(1), "from alpha", 0);
    b->put(key(1), "from beta!", 0);
    star->put(key(1), "from al*", 0);
    CHECK(a->get(key(1)) == std::optional<std::string>("from alpha"));
    CHECK(b->get(key(1)) == std::optional<std::string>("from beta!"));

    // Enough keys for several SCAN steps and UNLINK batches.
    std::uint64_t expected_bytes = 10;  // "from alpha"
    for (std::uint64_t i = 100; i < 1600; ++i) {
      std::string v(i % 50, 'x');
      a->put(key(i), v, 0);
      expected_bytes += v.size();
    }
    CHECK(a->entries() == 1501);
    CHECK(a->bytes() == expected_bytes);
    CHECK(b->entries() == 1);
    CHECK(b->bytes() == 10);
    CHECK(star->entries() == 1);

    star->clear();
    CHECK(star->entries() == 0);
    CHECK(a->entries() == 1501);
    a->clear();
    CHECK(a->entries() == 0);
    CHECK(a->bytes() == 0);
    CHECK_FALSE(a->get(key(1)).has_value());
    CHECK(b->get(key(1)) == std::optional<std::string>("from beta!"));
    CHECK(server.integer("DBSIZE") == 1);
    a->clear();  // clearing an empty namespace is fine
  }

  TEST_CASE("redis: erase_version removes one model version's results in its own namespace only") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto a = make_redis_backend(server.url(), "ns");
    auto other = make_redis_backend(server.url(), "other");
    for (int i = 0; i < 700; ++i)
      a->put(result_key("v1", std::to_string(i)), "old", 0);  // several SCAN steps
    a->put(result_key("v2", "0"), "new", 0);
    other->put(result_key("v1", "0"), "theirs", 0);
    CHECK(a->erase_version(version_tag("v1")) == 700);
    CHECK(a->entries() == 1);
    CHECK(a->get(result_key("v2", "0")) == std::optional<std::string>("new"));
    CHECK(other->get(result_key("v1", "0")) == std::optional<std::string>("theirs"));
  }

  TEST_CASE("redis: get_many answers in order, across pipelined batches") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto b = make_redis_backend(server.url(), "many");
    std::vector<CacheKey> keys;
    for (std::uint64_t i = 0; i < 600; ++i) {
      if (i % 3 != 0) b->put(key(i), "v" + std::to_string(i), 0);
      keys.push_back(key(i));
    }
    auto got = b->get_many(keys);
    REQUIRE(got.size() == keys.size());
    int wrong = 0;
    for (std::uint64_t i = 0; i < 600; ++i) {
      std::optional<std::string> want;
      if (i % 3 != 0) want = "v" + std::to_string(i);
      if (got[i] != want) ++wrong;
    }
    CHECK(wrong == 0);
    CHECK(b->get_many({}).empty());
  }

  TEST_CASE("redis: error replies are BackendErrors and leave the backend usable") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto b = make_redis_backend(server.url(), "err");
    const std::string url = server.url();
    b->put(key(1), "one", 0);
    b->put(key(3), "three", 0);
    // Someone else's list where a value should be.
    REQUIRE(server.integer("RPUSH inferprof:err:" + to_hex(key(2)) + " x") == 1);
    const std::string wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    CHECK(backend_error_of([&] { b->get(key(2)); }) == "Redis at " + url + ": GET failed: " + wrongtype);
    CHECK(b->get(key(1)) == std::optional<std::string>("one"));
    // In the middle of a pipelined batch, with replies still to read.
    CHECK(backend_error_of([&] {
            b->get_many({key(1), key(2), key(3)});
          }) == "Redis at " + url + ": GET (pipelined) failed: " + wrongtype);
    CHECK(b->get_many({key(1), key(3)}) ==
          std::vector<std::optional<std::string>>{std::string("one"), std::string("three")});

    // A full server refuses a SET.
    REQUIRE(server.command("CONFIG SET maxmemory 1") == "+OK");
    std::string message = backend_error_of([&] { b->put(key(4), std::string(4096, 'm'), 0); });
    CHECK(message.rfind("Redis at " + url + ": SET failed: OOM ", 0) == 0);
    REQUIRE(server.command("CONFIG SET maxmemory 0") == "+OK");
    b->put(key(4), "fits again", 10);
    CHECK(b->get(key(4)) == std::optional<std::string>("fits again"));
  }

  TEST_CASE("redis: an unreachable server is a runtime error (exit 3) naming the URL") {
    REQUIRE_REDIS_SERVER();
    std::string url = "redis://127.0.0.1:" + std::to_string(RedisServer::free_port()) + "/0";
    auto [message, code] = error_of([&] { make_redis_backend(url, "x"); });
    CHECK(message == "cannot reach Redis at " + url + ": Connection refused");
    CHECK(code == 3);
  }

  TEST_CASE("redis: a malformed URL is bad input (exit 2) and never shows a password") {
    for (const char* url : {"http://127.0.0.1:6379", "redis://", "redis://:6379", "redis://127.0.0.1:0",
                            "redis://127.0.0.1:65536", "redis://127.0.0.1:6379/x", "redis://127.0.0.1:", "redis:/h:1",
                            "unix://relative.sock", "unix:///tmp/r.sock?db=x", "unix:///tmp/r.sock?timeout=1"}) {
      CAPTURE(url);
      auto [message, code] = error_of([&] { make_redis_backend(url, "x"); });
      CHECK(message == std::string("bad Redis URL '") + url + "': " + kUrlForms);
      CHECK(code == 2);
    }
    auto [message, code] = error_of([&] { make_redis_backend("redis://:hunter2@127.0.0.1:99999/0", "x"); });
    CHECK(message == std::string("bad Redis URL 'redis://***@127.0.0.1:99999/0': ") + kUrlForms);
    CHECK(code == 2);
    auto [m2, c2] = error_of([&] { make_redis_backend("unix:///tmp/r.sock?password=hunter2&db=q", "x"); });
    CHECK(m2 == std::string("bad Redis URL 'unix:///tmp/r.sock?password=***&db=q': ") + kUrlForms);
    CHECK(c2 == 2);
  }

  TEST_CASE("redis: passwords work from the URL or INFERPROF_REDIS_PASSWORD and are never shown") {
    REQUIRE_REDIS_SERVER();
    const std::string pw = "Pa55-wd_Zq81";
    const std::string wrong = "Wr0ng-guess_77";
    RedisServer server(pw);
    const std::string host = "127.0.0.1:" + std::to_string(server.port());

    SUBCASE("right password in the URL") {
      auto b = make_redis_backend(server.url_with_password(), "pw");
      b->put(key(1), "secret stuff", 0);
      CHECK(b->get(key(1)) == std::optional<std::string>("secret stuff"));
      CHECK(b->describe() == "redis redis://:***@" + host + "/0 (keys inferprof:pw:*)");
      CHECK(b->describe().find(pw) == std::string::npos);
    }
    SUBCASE("wrong password in the URL") {
      auto [message, code] = error_of([&] { make_redis_backend("redis://:" + wrong + "@" + host + "/0", "pw"); });
      CHECK(code == 3);
      CHECK(message.find(wrong) == std::string::npos);
      CHECK(message.find(pw) == std::string::npos);
      CHECK(message.rfind("Redis at redis://:***@" + host + "/0 refused AUTH with the URL's password: ", 0) == 0);
    }
    SUBCASE("no password") {
      auto [message, code] = error_of([&] { make_redis_backend(server.url(), "pw"); });
      CHECK(code == 3);
      CHECK(message.rfind("Redis at " + server.url() + " requires a password", 0) == 0);
    }
    SUBCASE("password from the environment") {
      ScopedEnv env("INFERPROF_REDIS_PASSWORD", pw);
      auto b = make_redis_backend(server.url(), "pw");
      b->put(key(2), "via env", 0);
      CHECK(b->get(key(2)) == std::optional<std::string>("via env"));
      CHECK(b->describe() == "redis " + server.url() + " (keys inferprof:pw:*)");
    }
    SUBCASE("the URL wins over the environment") {
      ScopedEnv env("INFERPROF_REDIS_PASSWORD", wrong);
      CHECK_NOTHROW(make_redis_backend(server.url_with_password(), "pw"));
      auto [message, code] = error_of([&] { make_redis_backend(server.url(), "pw"); });
      CHECK(code == 3);
      CHECK(message.find(wrong) == std::string::npos);
      CHECK(message.rfind("Redis at " + server.url() + " refused AUTH with INFERPROF_REDIS_PASSWORD: ", 0) == 0);
    }
    SUBCASE("a password with URL-reserved characters, percent-encoded") {
      // Only checks the decoding: the server's password has none of these.
      auto [message, code] = error_of([&] { make_redis_backend("redis://:a%40b%2Fc@" + host + "/0", "pw"); });
      CHECK(code == 3);
      CHECK(message.find("a@b/c") == std::string::npos);
      CHECK(message.find("a%40b") == std::string::npos);
    }
  }

  TEST_CASE("redis: a server that dies mid-use gives BackendError - a restarted one is picked up") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto b = make_redis_backend(server.url(), "crash");
    b->put(key(1), "before", 0);
    CHECK(b->get(key(1)) == std::optional<std::string>("before"));

    server.stop(/*hard=*/true);
    const std::string refused = "cannot reach Redis at " + server.url() + ": Connection refused";
    CHECK(backend_error_of([&] { b->get(key(1)); }) == refused);
    CHECK(backend_error_of([&] { b->put(key(2), "during", 0); }) == refused);
    CHECK(backend_error_of([&] { b->get_many({key(1), key(2)}); }) == refused);
    CHECK(backend_error_of([&] { b->entries(); }) == refused);
    CHECK(backend_error_of([&] { b->clear(); }) == refused);

    server.start();  // same port, empty (no persistence)
    CHECK_NOTHROW(b->put(key(3), "after", 0));
    CHECK(b->get(key(3)) == std::optional<std::string>("after"));
    CHECK_FALSE(b->get(key(1)).has_value());

    // A restart while connections sit in the pool: the stale ones are
    // replaced without the caller seeing an error.
    server.stop();
    server.start();
    CHECK_NOTHROW(b->put(key(4), "again", 0));
    CHECK(b->get(key(4)) == std::optional<std::string>("again"));
  }

  TEST_CASE("redis: a server that stops answering times out as BackendError") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto b = make_redis_backend(server.url(), "slow");
    b->put(key(1), "v", 0);
    server.pause();
    auto t0 = std::chrono::steady_clock::now();
    std::string message = backend_error_of([&] { b->get(key(1)); });
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    server.resume();
    CHECK(message == "Redis at " + server.url() + ": GET failed: no answer within 2 s");
    CHECK(waited < 5);  // one timeout, no retry
    CHECK(b->get(key(1)) == std::optional<std::string>("v"));
  }

  TEST_CASE("redis: four threads share one backend") {
    REQUIRE_REDIS_SERVER();
    RedisServer server;
    auto b = make_redis_backend(server.url(), "mt");
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (std::uint64_t i = 0; i < 400; ++i) {
          CacheKey k = key(i, 1000 + static_cast<std::uint64_t>(t));
          std::string v = std::to_string(t) + ":" + std::to_string(i) + std::string(i % 200, 'z');
          b->put(k, v, 0);
          if (b->get(k) != std::optional<std::string>(v)) ++wrong;
          // Read a neighbour's key too: present or not, never someone else's value.
          auto other = b->get(key(i, 1000 + static_cast<std::uint64_t>((t + 1) % 4)));
          if (other && other->rfind(std::to_string((t + 1) % 4) + ":" + std::to_string(i), 0) != 0) ++wrong;
        }
      });
    }
    for (auto& th : threads)
      th.join();
    CHECK(wrong == 0);
    CHECK(b->entries() == 1600);
  }

  // ---- LMDB --------------------------------------------------------------

  TEST_CASE("lmdb: binary values round-trip and persist across a re-open") {
    TempDir dir;
    std::string path = dir.file("l3");
    std::string value = std::string("\0x\0y", 4) + random_bytes(150 * 1024, 2);
    {
      auto b = make_lmdb_backend(path, "pre");
      CHECK(b->describe() == "lmdb " + path + " (namespace pre)");
      CHECK_FALSE(b->get(key(1)).has_value());
      b->put(key(1), value, 0);
      b->put(key(2), "", 0);
      CHECK(b->get(key(1)) == std::optional<std::string>(value));
      CHECK(b->get(key(2)) == std::optional<std::string>(""));
      b->put(key(2), "overwritten", 0);
    }
    CHECK(std::filesystem::exists(std::filesystem::path(path) / "data.mdb"));
    auto again = make_lmdb_backend(path, "pre");
    CHECK(again->get(key(1)) == std::optional<std::string>(value));
    CHECK(again->get(key(2)) == std::optional<std::string>("overwritten"));
    CHECK(again->entries() == 2);
    CHECK(again->bytes() == value.size() + 11);
    auto many = again->get_many({key(2), key(3), key(1)});
    REQUIRE(many.size() == 3);
    CHECK(many[0] == std::optional<std::string>("overwritten"));
    CHECK_FALSE(many[1].has_value());
    CHECK(many[2] == std::optional<std::string>(value));
  }

  TEST_CASE("lmdb: namespaces share a folder - clear() empties only its own") {
    TempDir dir;
    auto a = make_lmdb_backend(dir.file("db"), "a");
    auto b = make_lmdb_backend(dir.file("db"), "b");  // same environment, opened once
    a->put(key(1), "A", 0);
    b->put(key(1), "BB", 0);
    for (std::uint64_t i = 10; i < 110; ++i)
      a->put(key(i), std::string(i, 'q'), 0);
    CHECK(a->get(key(1)) == std::optional<std::string>("A"));
    CHECK(b->get(key(1)) == std::optional<std::string>("BB"));
    CHECK(a->entries() == 101);
    CHECK(b->bytes() == 2);
    a->clear();
    CHECK(a->entries() == 0);
    CHECK(a->bytes() == 0);
    CHECK_FALSE(a->get(key(1)).has_value());
    CHECK(b->get(key(1)) == std::optional<std::string>("BB"));
    a->put(key(1), "A again", 0);  // usable after clear()
    CHECK(a->get(key(1)) == std::optional<std::string>("A again"));
  }

  TEST_CASE("lmdb: values expire after their TTL") {
    TempDir dir;
    auto b = make_lmdb_backend(dir.file("ttl"), "t");
    b->put(key(1), "short", 0.2);
    b->put(key(2), "forever", 0);
    CHECK(b->get(key(1)) == std::optional<std::string>("short"));
    CHECK(b->entries() == 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CHECK(b->entries() == 1);  // expired values do not count
    CHECK(b->bytes() == 7);
    CHECK_FALSE(b->get(key(1)).has_value());
    CHECK(b->get(key(2)) == std::optional<std::string>("forever"));
    b->put(key(1), "renewed", 0);
    CHECK(b->get(key(1)) == std::optional<std::string>("renewed"));
  }

  TEST_CASE("lmdb: a full map is a BackendError that says what to do") {
    TempDir dir;
    std::string path = dir.file("tiny");
    auto b = make_lmdb_backend(path, "t", 64 * 1024);
    b->put(key(1), "fits", 0);
    CHECK(backend_error_of([&] { b->put(key(2), std::string(1 << 20, 'x'), 0); }) ==
          "LMDB map full at " + path + " (raise the map size)");
    CHECK(b->get(key(1)) == std::optional<std::string>("fits"));  // still usable
    CHECK_FALSE(b->get(key(2)).has_value());
  }

  TEST_CASE("lmdb: a folder that cannot be created is a runtime error naming it") {
    TempDir dir;
    std::string file = dir.file("plain-file");
    std::ofstream(file) << "not a folder";
    std::string path = file + "/cache";
    auto [message, code] = error_of([&] { make_lmdb_backend(path, "x"); });
    CHECK(message == "cannot create the LMDB cache folder " + path + ": Not a directory");
    CHECK(code == 3);
    auto [m2, c2] = error_of([&] { make_lmdb_backend(file, "x"); });
    CHECK(m2 == "cannot open the LMDB cache at " + file + ": not a folder");
    CHECK(c2 == 3);
  }

  TEST_CASE("lmdb: four threads share one backend") {
    TempDir dir;
    auto b = make_lmdb_backend(dir.file("mt"), "mt");
    std::atomic<int> wrong{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (std::uint64_t i = 0; i < 300; ++i) {
          CacheKey k = key(i, 2000 + static_cast<std::uint64_t>(t));
          std::string v = std::to_string(t) + ":" + std::to_string(i) + std::string(i * 7, 'w');
          b->put(k, v, i % 2 ? 60.0 : 0.0);
          if (b->get(k) != std::optional<std::string>(v)) ++wrong;
        }
      });
    }
    for (auto& th : threads)
      th.join();
    CHECK(wrong == 0);
    CHECK(b->entries() == 1200);
  }
}
