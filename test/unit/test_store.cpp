// The model store against the real things: files in a temp folder, a
// redis-server per test, and Python's http.server on loopback.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "http_server.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/store.hpp"
#include "model_manifest.hpp"
#include "redis_server.hpp"
#include "temp_dir.hpp"
#include "test_util.hpp"

using namespace inferprof;
using inferprof::testing::error_of;
using inferprof::testing::HttpServer;
using inferprof::testing::random_bytes;
using inferprof::testing::redis_key;
using inferprof::testing::RedisServer;
using inferprof::testing::TempDir;
namespace fs = std::filesystem;

namespace {

#define REQUIRE_HTTP_SERVER()                                   \
  do {                                                          \
    if (!HttpServer::available()) {                             \
      MESSAGE("python3 with http.server is missing; skipping"); \
      return;                                                   \
    }                                                           \
  } while (0)

ModelRef ref(const std::string& text) {
  return parse_model_ref(text, "test");
}

// A "VmRSS:" or "VmHWM:" line of /proc/self/status, in kB (-1 when missing).
long status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field, 0) == 0) return std::stol(line.substr(field.size()));
  return -1;
}

StoreOptions options(const std::string& remote, const std::string& redis = "") {
  StoreOptions o;
  o.remote_url = remote;
  o.redis_url = redis;
  return o;
}

}  // namespace

TEST_SUITE("store") {
  TEST_CASE("model refs: NAME@VERSION or NAME, with messages that say what was expected") {
    CHECK(ref("resnet@v2").name == "resnet");
    CHECK(ref("resnet@v2").version == "v2");
    CHECK(ref("resnet").version.empty());
    CHECK(ref("res_net-1.0@2026.11").str() == "res_net-1.0@2026.11");
    CHECK(ref("resnet").str() == "resnet");
    for (const char* bad : {"", "@v1", "m@", "m@v1@v2", "../m@v1", "m@..", "a/b@v1", "m@v 1"}) {
      auto [msg, code] = error_of([&] { parse_model_ref(bad, "--model"); });
      CHECK(code == 2);
      CHECK(msg.rfind("--model: expected NAME@VERSION or NAME", 0) == 0);
      CHECK(msg.find(std::string("'") + bad + "'") != std::string::npos);
    }
  }

  TEST_CASE("sha256 matches the FIPS 180-2 test vectors") {
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  }

  TEST_CASE("file store: put, list, meta, fetch and remove round-trip, with index.json kept current") {
    TempDir dir;
    std::string root = dir.file("models");
    auto store = open_remote_store("file://" + root);
    std::string v1 = random_bytes(10000, 1), v2 = random_bytes(20000, 2);
    store->put(ref("m@v1"), v1);
    store->put(ref("m@v2"), v2);
    store->put(ref("a@x"), "tiny");
    CHECK(fs::exists(root + "/m/v1/model.pt"));
    ModelMeta meta = store->meta(ref("m@v2"));
    CHECK(meta.name == "m");
    CHECK(meta.version == "v2");
    CHECK(meta.size == 20000);
    CHECK(meta.sha256 == sha256_hex(v2));
    CHECK(meta.created.size() == 24);  // 2026-11-30T01:02:03.123Z
    CHECK(meta.created.back() == 'Z');
    CHECK(store->fetch(ref("m@v1"), v1.size()) == v1);
    CHECK(store->fetch(ref("m"), v2.size()) == v2);  // no version: the newest

    std::vector<ModelMeta> all = store->list();
    REQUIRE(all.size() == 3);
    CHECK(all[0].name == "a");
    CHECK(all[1].version == "v1");
    CHECK(all[2].version == "v2");
    // A plain folder is the same store.
    CHECK(open_remote_store(root)->list().size() == 3);
    std::ifstream index(root + "/index.json");
    std::string text((std::istreambuf_iterator<char>(index)), {});
    CHECK(text.find("\"sha256\": \"" + sha256_hex(v1) + "\"") != std::string::npos);

    auto [msg, code] = error_of([&] { store->put(ref("m@v1"), "other"); });
    CHECK(code == 2);
    CHECK(msg.find("m@v1 exists already") != std::string::npos);

    CHECK(store->remove(ref("m@v1")));
    CHECK_FALSE(store->remove(ref("m@v1")));
    CHECK_FALSE(fs::exists(root + "/m/v1"));
    CHECK(store->list().size() == 2);
    std::ifstream index2(root + "/index.json");
    std::string text2((std::istreambuf_iterator<char>(index2)), {});
    CHECK(text2.find(sha256_hex(v1)) == std::string::npos);
    CHECK(store->remove(ref("a@x")));
    CHECK_FALSE(fs::exists(root + "/a"));  // the name's folder goes with its last version
  }

  TEST_CASE("remote stores: unsupported schemes and missing folders are bad input") {
    auto [msg, code] = error_of([] { open_remote_store("ftp://host/models"); });
    CHECK(code == 2);
    CHECK(msg ==
          "store URL 'ftp://host/models': unsupported scheme; expected a folder, file:///path or "
          "http(s)://host/path");
    TempDir dir;
    auto [msg2, code2] = error_of([&] { open_remote_store(dir.file("none"))->list(); });
    CHECK(code2 == 2);
    CHECK(msg2 == dir.file("none") + ": no such folder " + dir.file("none"));
  }

  TEST_CASE("model store: remote, then memory - and unknown models or versions say what there is") {
    TempDir dir;
    std::string root = dir.file("models");
    auto remote = open_remote_store(root);
    std::string v1 = random_bytes(5000, 1), v2 = random_bytes(6000, 2);
    remote->put(ref("m@v1"), v1);
    remote->put(ref("m@v2"), v2);

    ModelStore store(options(root));
    FetchedModel a = store.fetch(ref("m@v1"));
    CHECK(a.tier == StoreTier::remote);
    CHECK(*a.bytes == v1);
    CHECK(a.meta.sha256 == sha256_hex(v1));
    FetchedModel b = store.fetch(ref("m@v1"));
    CHECK(b.tier == StoreTier::memory);
    CHECK(b.bytes == a.bytes);  // the same bytes, not a copy

    FetchedModel newest = store.fetch(ref("m"));
    CHECK(newest.ref.version == "v2");
    CHECK(*newest.bytes == v2);
    StoreCounters c = store.counters();
    CHECK(c.remote_fetches == 2);
    CHECK(c.memory_hits == 1);
    CHECK(store_tier_name(StoreTier::redis) == "redis");

    auto [msg, code] = error_of([&] { store.fetch(ref("m@v9")); });
    CHECK(code == 2);
    CHECK(msg == root + ": no model m@v9 ('m' has v1, v2)");
    auto [msg2, code2] = error_of([&] { store.fetch(ref("other")); });
    CHECK(code2 == 2);
    CHECK(msg2 == root + ": no model other (no versions of 'other')");
  }

  TEST_CASE("model store: memory is an LRU by count and by bytes") {
    TempDir dir;
    auto remote = open_remote_store(dir.str());
    for (const char* m : {"a@1", "b@1", "c@1"})
      remote->put(ref(m), random_bytes(1000, 7));
    SUBCASE("by count") {
      StoreOptions o = options(dir.str());
      o.memory_max_models = 2;
      ModelStore store(o);
      store.fetch(ref("a@1"));
      store.fetch(ref("b@1"));
      store.fetch(ref("a@1"));  // a is now the most recent
      store.fetch(ref("c@1"));  // evicts b
      CHECK(store.fetch(ref("a@1")).tier == StoreTier::memory);
      CHECK(store.fetch(ref("b@1")).tier == StoreTier::remote);
    }
    SUBCASE("by bytes") {
      StoreOptions o = options(dir.str());
      o.memory_max_models = 0;
      o.memory_max_bytes = 2500;
      ModelStore store(o);
      store.fetch(ref("a@1"));
      store.fetch(ref("b@1"));
      store.fetch(ref("c@1"));  // 3000 bytes would not fit: a goes
      CHECK(store.fetch(ref("c@1")).tier == StoreTier::memory);
      CHECK(store.fetch(ref("a@1")).tier == StoreTier::remote);
    }
  }

  TEST_CASE("model store: a missing remote object is a runtime error naming it") {
    TempDir dir;
    auto remote = open_remote_store(dir.str());
    remote->put(ref("m@v1"), "bytes");
    fs::remove(dir.file("m/v1/model.pt"));
    ModelStore store(options(dir.str()));
    auto [msg, code] = error_of([&] { store.fetch(ref("m@v1")); });
    CHECK(code == 3);
    CHECK(msg == dir.str() + ": m@v1: model.pt is missing from " + dir.file("m/v1") + " (its meta.json is there)");
  }

  TEST_CASE("model store: a sha256 mismatch throws, is counted, and caches nothing") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    TempDir dir;
    auto remote = open_remote_store(dir.str());
    std::string good = random_bytes(3000, 3);
    remote->put(ref("m@v1"), good);
    std::string tampered = good;
    tampered[100] ^= 1;
    std::ofstream(dir.file("m/v1/model.pt"), std::ios::binary) << tampered;

    ModelStore store(options(dir.str(), redis.url()));
    for (int i = 0; i < 2; ++i) {  // the second time too: nothing was cached
      auto [msg, code] = error_of([&] { store.fetch(ref("m@v1")); });
      CHECK(code == 3);
      CHECK(msg.rfind("m@v1: sha256 mismatch: the metadata in " + dir.str() + " says " + sha256_hex(good), 0) == 0);
      CHECK(msg.find("hashes to " + sha256_hex(tampered)) != std::string::npos);
    }
    StoreCounters c = store.counters();
    CHECK(c.verify_failures == 2);
    CHECK(c.remote_fetches == 2);
    CHECK(c.memory_hits == 0);
    CHECK(redis.integer("DBSIZE") == 0);
  }

  TEST_CASE("model store: Redis serves a second store instance and fills memory - chunked, zstd on or off") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    TempDir dir;
    auto remote = open_remote_store(dir.str());
    // Compressible (repeated text) and incompressible halves.
    std::string model;
    while (model.size() < 20000)
      model += "weights weights weights ";
    model += random_bytes(5000, 4);
    remote->put(ref("m@v1"), model);
    bool zstd_write = false, zstd_read = false;
    SUBCASE("zstd off") {}
    SUBCASE("zstd on") {
      zstd_write = zstd_read = true;
    }
    SUBCASE("written with zstd, read by a store without") {
      zstd_write = true;
    }
    StoreOptions o = options(dir.str(), redis.url());
    o.redis_chunk_bytes = 4096;
    o.zstd = zstd_write;
    {
      ModelStore first(o);
      CHECK(first.fetch(ref("m@v1")).tier == StoreTier::remote);
    }
    // 7 chunks of 4 KB and the manifest.
    CHECK(redis.integer("DBSIZE") == 8);
    long long chunk0 = redis.integer("STRLEN " + redis_key("m@v1", "chunk 0"));
    if (zstd_write)
      CHECK(chunk0 < 1000);
    else
      CHECK(chunk0 == 4096);
    o.zstd = zstd_read;
    ModelStore second(o);
    FetchedModel f = second.fetch(ref("m@v1"));
    CHECK(f.tier == StoreTier::redis);
    CHECK(*f.bytes == model);
    CHECK(f.meta.sha256 == sha256_hex(model));
    CHECK(second.fetch(ref("m@v1")).tier == StoreTier::memory);
    StoreCounters c = second.counters();
    CHECK(c.redis_hits == 1);
    CHECK(c.remote_fetches == 0);
    CHECK(c.memory_hits == 1);
    CHECK(c.redis_corrupt == 0);
  }

  TEST_CASE("model store: a corrupt or missing Redis chunk falls back to the remote and is counted") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    TempDir dir;
    auto remote = open_remote_store(dir.str());
    std::string model = random_bytes(10000, 5);
    remote->put(ref("m@v1"), model);
    StoreOptions o = options(dir.str(), redis.url());
    o.redis_chunk_bytes = 4096;
    { ModelStore(o).fetch(ref("m@v1")); }
    std::string chunk1 = redis_key("m@v1", "chunk 1");
    REQUIRE(redis.integer("EXISTS " + chunk1) == 1);
    SUBCASE("corrupt") {
      CHECK(redis.command("SETRANGE " + chunk1 + " 100 garbage") == ":4096");
    }
    SUBCASE("missing") {
      CHECK(redis.integer("DEL " + chunk1) == 1);
    }
    SUBCASE("manifest damaged") {
      CHECK(redis.command("SETRANGE " + redis_key("m@v1", "manifest") + " 20 x") != "");
    }
    ModelStore store(o);
    FetchedModel f = store.fetch(ref("m@v1"));
    CHECK(f.tier == StoreTier::remote);
    CHECK(*f.bytes == model);
    StoreCounters c = store.counters();
    CHECK(c.redis_corrupt == 1);
    CHECK(c.redis_errors == 0);
    CHECK(c.remote_fetches == 1);
    // The remote's copy was written back: the next instance is served by Redis.
    ModelStore again(o);
    CHECK(again.fetch(ref("m@v1")).tier == StoreTier::redis);
  }

  TEST_CASE("model store: a forged manifest claiming a huge model counts as corrupt, and the remote serves") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    TempDir dir;
    auto remote = open_remote_store(dir.str());
    const std::string model = random_bytes(10000, 8);
    remote->put(ref("m@v1"), model);
    StoreOptions o = options(dir.str(), redis.url());
    { ModelStore(o).fetch(ref("m@v1")); }  // a real manifest and chunk 0
    std::uint64_t claim = 0;
    SUBCASE("2^62 bytes") {
      claim = std::uint64_t{1} << 62;
    }
    SUBCASE("1.5e9 bytes") {
      claim = 1'500'000'000;
    }
    REQUIRE(redis.set(redis_key("m@v1", "manifest"), inferprof::testing::forged_manifest(claim, sha256_hex(model))) ==
            "+OK");
    ModelStore store(o);
    // Nothing of the claimed size is allocated and zero-filled first: the peak
    // resident memory (reset through clear_refs) stays near where it was.
    std::ofstream("/proc/self/clear_refs") << "5";
    const long before = status_kb("VmRSS:");
    const bool peak_reset = status_kb("VmHWM:") < before + 100'000;
    FetchedModel f = store.fetch(ref("m@v1"));
    if (peak_reset)
      CHECK(status_kb("VmHWM:") - before < 500'000);
    else
      MESSAGE("the peak resident memory cannot be reset here: not checked");
    CHECK(f.tier == StoreTier::remote);
    CHECK(*f.bytes == model);
    StoreCounters c = store.counters();
    CHECK(c.redis_corrupt == 1);
    CHECK(c.redis_errors == 0);
    CHECK(c.remote_fetches == 1);
  }

  TEST_CASE("model store: Redis killed mid-way degrades to the remote, counted, no crash") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    TempDir dir;
    auto remote = open_remote_store(dir.str());
    remote->put(ref("m@v1"), random_bytes(8000, 6));
    remote->put(ref("m@v2"), random_bytes(8000, 7));
    ModelStore store(options(dir.str(), redis.url()));
    CHECK(store.fetch(ref("m@v1")).tier == StoreTier::remote);
    redis.stop(/*hard=*/true);
    FetchedModel f = store.fetch(ref("m@v2"));
    CHECK(f.tier == StoreTier::remote);
    CHECK(f.meta.version == "v2");
    CHECK(store.fetch(ref("m@v1")).tier == StoreTier::memory);
    store.evict(ref("m@v1"));  // Redis is still down: counted, not thrown
    CHECK(store.fetch(ref("m@v1")).tier == StoreTier::remote);
    StoreCounters c = store.counters();
    CHECK(c.redis_errors >= 3);  // get + put of v2, evict, get (+ put) of v1
    CHECK(c.remote_fetches == 3);
    // At start, an unreachable Redis is an error: the user asked for it.
    auto [msg, code] = error_of([&] { ModelStore s(options(dir.str(), redis.url())); });
    CHECK(code == 3);
    CHECK(msg.rfind("cannot reach Redis at " + redis.url(), 0) == 0);
  }

  TEST_CASE("model store: evict drops a version from memory and Redis") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    TempDir dir;
    open_remote_store(dir.str())->put(ref("m@v1"), random_bytes(3000, 8));
    ModelStore store(options(dir.str(), redis.url()));
    store.prefetch(ref("m@v1"));
    CHECK(store.fetch(ref("m@v1")).tier == StoreTier::memory);
    store.evict(ref("m@v1"));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the 1 ms expiry
    // EXISTS, not DBSIZE: Redis counts expired keys until it reaps them.
    CHECK(redis.integer("EXISTS " + redis_key("m@v1", "manifest")) == 0);
    CHECK(redis.integer("EXISTS " + redis_key("m@v1", "chunk 0")) == 0);
    CHECK(store.fetch(ref("m@v1")).tier == StoreTier::remote);
    CHECK(store.counters().remote_fetches == 2);
  }

  TEST_CASE("model store: threads fetching one model fetch it from the remote once") {
    TempDir dir;
    open_remote_store(dir.str())->put(ref("big@v1"), random_bytes(16 << 20, 9));
    ModelStore store(options(dir.str()));
    std::vector<std::thread> threads;
    std::vector<std::shared_ptr<const std::string>> got(8);
    for (int i = 0; i < 8; ++i)
      threads.emplace_back([&, i] { got[i] = store.fetch(ref("big@v1")).bytes; });
    for (auto& t : threads)
      t.join();
    for (const auto& g : got)
      CHECK(g == got[0]);
    CHECK(store.counters().remote_fetches == 1);
  }

  TEST_CASE("http store: a file store served over HTTP - fetch, newest, 404, an error status, read-only") {
    REQUIRE_HTTP_SERVER();
    TempDir dir;
    auto files = open_remote_store(dir.str());
    std::string v1 = random_bytes(7000, 10), v2 = random_bytes(9000, 11);
    files->put(ref("m@v1"), v1);
    files->put(ref("m@v2"), v2);
    files->put(ref("gone@v1"), "x");
    fs::remove(dir.file("gone/v1/model.pt"));
    HttpServer http(dir.str());

    ModelStore store(options(http.url()));
    FetchedModel f = store.fetch(ref("m@v1"));
    CHECK(f.tier == StoreTier::remote);
    CHECK(*f.bytes == v1);
    CHECK(store.fetch(ref("m")).ref.version == "v2");
    CHECK(store.remote().list().size() == 3);

    auto [msg, code] = error_of([&] { store.fetch(ref("m@v3")); });
    CHECK(code == 2);
    CHECK(msg == http.url() + ": no model m@v3 ('m' has v1, v2)");
    auto [msg2, code2] = error_of([&] { store.fetch(ref("gone@v1")); });
    CHECK(code2 == 3);
    CHECK(msg2 ==
          http.url() + ": gone@v1: GET " + http.url() + "/gone/v1/model.pt: HTTP 404 (the model file is missing)");

    auto broken = open_remote_store(http.url() + "/status-503");
    auto [msg3, code3] = error_of([&] { broken->meta(ref("m@v1")); });
    CHECK(code3 == 3);
    CHECK(msg3 == http.url() + "/status-503: GET " + http.url() + "/status-503/m/v1/meta.json: HTTP 503");

    auto [msg4, code4] = error_of([&] { store.remote().put(ref("m@v9"), "x"); });
    CHECK(code4 == 2);
    CHECK(msg4.find("read-only") != std::string::npos);

    http.stop();
    ModelStore cold(options(http.url()));
    auto [msg5, code5] = error_of([&] { cold.fetch(ref("m@v2")); });
    CHECK(code5 == 3);
    CHECK(msg5.rfind(http.url() + ": GET " + http.url() + "/m/v2/meta.json: ", 0) == 0);
  }

  TEST_CASE("http store: a model.pt larger than its meta.json states is stopped at that size, never read whole") {
    REQUIRE_HTTP_SERVER();
    TempDir dir;
    auto files = open_remote_store(dir.str());
    const std::string v1 = random_bytes(7000, 12);
    files->put(ref("m@v1"), v1);
    // The server's file is 8 MB: meta.json still says 7000 bytes.
    {
      std::ofstream grown(dir.file("m/v1/model.pt"), std::ios::binary | std::ios::trunc);
      const std::string chunk = random_bytes(1 << 20, 13);
      for (int i = 0; i < 8; ++i)
        grown << chunk;
    }
    HttpServer http(dir.str());
    // With a Content-Length: stopped before the body.
    ModelStore store(options(http.url()));
    auto [msg, code] = error_of([&] { store.fetch(ref("m@v1")); });
    CHECK(code == 3);
    CHECK(msg == http.url() + ": GET " + http.url() +
                     "/m/v1/model.pt: the body is over 7000 bytes, the size its meta.json states: the server "
                     "announces 8388608 bytes (stopped before reading it)");
    // Without one: stopped once past the size, a few kilobytes in.
    ModelStore unsized(options(http.url() + "/no-length"));
    auto [msg2, code2] = error_of([&] { unsized.fetch(ref("m@v1")); });
    CHECK(code2 == 3);
    const std::string head = http.url() + "/no-length: GET " + http.url() +
                             "/no-length/m/v1/model.pt: the body is over 7000 bytes, the size its meta.json states: ";
    REQUIRE_MESSAGE(msg2.rfind(head, 0) == 0, msg2);
    const std::string tail = " received when it was stopped";
    REQUIRE(msg2.size() > head.size() + tail.size());
    CHECK(msg2.substr(msg2.size() - tail.size()) == tail);
    const auto received = std::stoull(msg2.substr(head.size(), msg2.size() - head.size() - tail.size()));
    CHECK(received > 7000);
    CHECK(received < 7000 + 1024 * 1024);
    CHECK(unsized.counters().remote_fetches == 0);
  }

  TEST_CASE("update channel: a publish reaches a subscriber - bad messages are skipped") {
    REQUIRE_REDIS_SERVER();
    RedisServer redis;
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::string> seen;
    UpdateChannel sub(redis.url(), "inferprof:updates", [&](const ModelRef& r) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(r.str());
      cv.notify_all();
    });
    sub.wait_subscribed();
    UpdateChannel pub(redis.url(), "inferprof:updates", [](const ModelRef&) {});
    pub.wait_subscribed();
    CHECK(redis.command("PUBLISH inferprof:updates not@a@ref") == ":2");  // both channels' subscribers
    pub.publish(ref("resnet@v2"));
    std::unique_lock<std::mutex> lock(mu);
    CHECK(cv.wait_for(lock, std::chrono::seconds(5), [&] { return !seen.empty(); }));
    CHECK(seen == std::vector<std::string>{"resnet@v2"});
    lock.unlock();

    // A restarted server: the publisher reconnects, the subscriber subscribes again.
    redis.stop(/*hard=*/true);
    redis.start();
    bool delivered = false;
    for (int i = 0; i < 100 && !delivered; ++i) {
      pub.publish(ref("resnet@v3"));
      std::unique_lock<std::mutex> again(mu);
      delivered = cv.wait_for(again, std::chrono::milliseconds(50), [&] { return seen.size() > 1; });
    }
    CHECK(delivered);
    std::lock_guard<std::mutex> relock(mu);
    CHECK(seen.back() == "resnet@v3");

    auto [msg, code] = error_of([&] { UpdateChannel c("redis://127.0.0.1:1/0", "x", [](const ModelRef&) {}); });
    CHECK(code == 3);
    CHECK(msg.rfind("cannot reach Redis at redis://127.0.0.1:1/0", 0) == 0);
  }
}
