// The local-disk backend of the cache tiers: an LMDB environment in a folder.
// LMDB is included here and nowhere else (docs/development.md).
//
// One named database per namespace, so clear() is a single mdb_drop. Keys are
// the 16 bytes of the CacheKey; a value is an 8-byte header -- its expiry in
// milliseconds since the Unix epoch, 0 for none -- then the blob. Wall-clock
// time, because the folder outlives the process. An expired value reads as
// missing and is deleted by the reader that finds it.
//
// The environment is opened MDB_NOTLS (read transactions are not tied to a
// thread, so any thread may read) and MDB_NOSYNC: a cache does not pay an
// fsync per insert. A process crash loses nothing committed; an operating
// system crash may lose the latest inserts or damage the file -- then delete
// the folder. The data is flushed when the last backend on the folder closes.
//
// LMDB forbids opening one environment twice in a process, so backends on the
// same folder (say L3 and another namespace) share it through a registry; the
// first opener's map size holds until the last one closes.
#include <lmdb.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <system_error>
#include <utility>

#include "base/output_owner.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"

namespace inferprof {
namespace {

namespace fs = std::filesystem;

constexpr unsigned kMaxNamespaces = 128;
constexpr unsigned kMaxReaders = 512;  // concurrent get()s over all processes (LMDB's default: 126)
constexpr std::size_t kExpiryHeader = sizeof(std::uint64_t);

std::uint64_t now_ms() {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

struct Env {
  MDB_env* env = nullptr;
  std::string path;
  std::mutex open_dbi;  // mdb_dbi_open must not run concurrently
};

// The environments open in this process, by canonical folder. An entry whose
// Env is gone but still listed is being closed: an opener waits for that, so
// that LMDB never has one environment open twice (its lock-file locks are per
// process, and closing one copy would drop the other's).
struct Registry {
  std::mutex mutex;
  std::condition_variable closed;
  std::map<std::string, std::weak_ptr<Env>> open;
};
Registry& registry() {
  static Registry r;
  return r;
}

std::shared_ptr<Env> open_env(const std::string& path, std::uint64_t map_bytes) {
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_directory(path, ec))
    throw runtime_failure("cannot open the LMDB cache at " + path + ": not a folder");
  if (const int err = output::make_dirs(path); err != 0)
    throw runtime_failure("cannot create the LMDB cache folder " + path + ": " + std::strerror(err));
  std::string canonical = fs::weakly_canonical(fs::absolute(path), ec).string();
  if (ec) canonical = path;

  Registry& reg = registry();
  std::unique_lock<std::mutex> lock(reg.mutex);
  for (;;) {
    auto it = reg.open.find(canonical);
    if (it == reg.open.end()) break;
    if (auto e = it->second.lock()) return e;
    reg.closed.wait(lock);
  }

  MDB_env* env = nullptr;
  int rc = mdb_env_create(&env);
  if (rc == MDB_SUCCESS) rc = mdb_env_set_mapsize(env, static_cast<std::size_t>(map_bytes));
  if (rc == MDB_SUCCESS) rc = mdb_env_set_maxdbs(env, kMaxNamespaces);
  if (rc == MDB_SUCCESS) rc = mdb_env_set_maxreaders(env, kMaxReaders);
  if (rc == MDB_SUCCESS) rc = mdb_env_open(env, path.c_str(), MDB_NOTLS | MDB_NOSYNC, 0664);
  if (rc != MDB_SUCCESS) {
    if (env) mdb_env_close(env);
    throw runtime_failure("cannot open the LMDB cache at " + path + ": " + mdb_strerror(rc));
  }
  int dead = 0;
  mdb_reader_check(env, &dead);  // free the reader slots of crashed processes

  auto* raw = new Env;
  raw->env = env;
  raw->path = path;
  std::shared_ptr<Env> e(raw, [canonical](Env* p) {
    Registry& r = registry();
    std::lock_guard<std::mutex> guard(r.mutex);
    mdb_env_sync(p->env, 1);
    mdb_env_close(p->env);
    delete p;
    r.open.erase(canonical);
    r.closed.notify_all();
  });
  reg.open[canonical] = e;
  return e;
}

// A transaction, aborted unless committed.
class Txn {
 public:
  Txn() = default;
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  ~Txn() {
    if (t_) mdb_txn_abort(t_);
  }
  int begin(MDB_env* env, unsigned flags) { return mdb_txn_begin(env, nullptr, flags, &t_); }
  int commit() {
    int rc = mdb_txn_commit(t_);
    t_ = nullptr;  // freed even when the commit fails
    return rc;
  }
  void abort() {
    if (t_) mdb_txn_abort(t_);
    t_ = nullptr;
  }
  MDB_txn* get() const { return t_; }

 private:
  MDB_txn* t_ = nullptr;
};

class LmdbBackend final : public BlobBackend {
 public:
  LmdbBackend(std::shared_ptr<Env> env, std::string name_space) : env_(std::move(env)), ns_(std::move(name_space)) {
    std::lock_guard<std::mutex> lock(env_->open_dbi);
    Txn txn;
    int rc = txn.begin(env_->env, 0);
    if (rc == MDB_SUCCESS) rc = mdb_dbi_open(txn.get(), ns_.c_str(), MDB_CREATE, &dbi_);
    if (rc == MDB_SUCCESS) rc = txn.commit();
    if (rc != MDB_SUCCESS)
      throw runtime_failure("cannot open the LMDB cache at " + env_->path + " (namespace " + ns_ +
                            "): " + mdb_strerror(rc));
  }

  std::string describe() const override { return "lmdb " + env_->path + " (namespace " + ns_ + ")"; }

  std::optional<std::string> get(const CacheKey& key) override {
    KeyBytes kb(key);
    MDB_val k = kb.val(), v;
    {
      Txn txn;
      check("mdb_txn_begin", txn.begin(env_->env, MDB_RDONLY));
      int rc = mdb_get(txn.get(), dbi_, &k, &v);
      if (rc == MDB_NOTFOUND) return std::nullopt;
      check("mdb_get", rc);
      if (v.mv_size >= kExpiryHeader && !expired(v)) {
        // Copy inside the transaction: the pointer is only valid until it ends.
        return std::string(static_cast<const char*>(v.mv_data) + kExpiryHeader, v.mv_size - kExpiryHeader);
      }
    }
    // Expired (or too short to be ours): delete it, unless a writer replaced
    // it since the read.
    Txn txn;
    check("mdb_txn_begin", txn.begin(env_->env, 0));
    int rc = mdb_get(txn.get(), dbi_, &k, &v);
    if (rc == MDB_SUCCESS && (v.mv_size < kExpiryHeader || expired(v))) {
      check("mdb_del", mdb_del(txn.get(), dbi_, &k, nullptr));
      check("mdb_txn_commit", txn.commit());
    }
    return std::nullopt;
  }

  void put(const CacheKey& key, std::string_view value, double ttl_s) override {
    std::uint64_t expiry = 0;
    if (ttl_s > 0 && ttl_s < 1e12) expiry = now_ms() + static_cast<std::uint64_t>(ttl_s * 1000.0 + 0.999);
    KeyBytes kb(key);
    MDB_val k = kb.val(), v;
    v.mv_size = kExpiryHeader + value.size();
    v.mv_data = nullptr;
    Txn txn;
    check("mdb_txn_begin", txn.begin(env_->env, 0));
    // MDB_RESERVE: LMDB hands out the space and the value is copied once, into the map.
    check("mdb_put", mdb_put(txn.get(), dbi_, &k, &v, MDB_RESERVE));
    std::memcpy(v.mv_data, &expiry, kExpiryHeader);
    if (!value.empty()) std::memcpy(static_cast<char*>(v.mv_data) + kExpiryHeader, value.data(), value.size());
    check("mdb_txn_commit", txn.commit());
  }

  void clear() override {
    Txn txn;
    check("mdb_txn_begin", txn.begin(env_->env, 0));
    check("mdb_drop", mdb_drop(txn.get(), dbi_, 0));
    check("mdb_txn_commit", txn.commit());
  }

  // Both walk the namespace with a cursor so that expired values do not
  // count (mdb_stat would count them); cheap next to a run.
  std::uint64_t entries() override { return census().first; }
  std::uint64_t bytes() override { return census().second; }

 private:
  struct KeyBytes {
    unsigned char b[16];
    explicit KeyBytes(const CacheKey& key) {
      for (int i = 0; i < 8; ++i) {
        b[i] = static_cast<unsigned char>(key.hi >> (56 - 8 * i));
        b[8 + i] = static_cast<unsigned char>(key.lo >> (56 - 8 * i));
      }
    }
    MDB_val val() { return MDB_val{sizeof b, b}; }
  };

  static bool expired(const MDB_val& v) {
    std::uint64_t expiry;
    std::memcpy(&expiry, v.mv_data, kExpiryHeader);
    return expiry != 0 && expiry <= now_ms();
  }

  void check(const char* call, int rc) const {
    if (rc == MDB_SUCCESS) return;
    if (rc == MDB_MAP_FULL) throw BackendError("LMDB map full at " + env_->path + " (raise the map size)");
    throw BackendError("LMDB at " + env_->path + ": " + call + ": " + mdb_strerror(rc));
  }

  std::pair<std::uint64_t, std::uint64_t> census() {
    Txn txn;
    check("mdb_txn_begin", txn.begin(env_->env, MDB_RDONLY));
    MDB_cursor* cur = nullptr;
    check("mdb_cursor_open", mdb_cursor_open(txn.get(), dbi_, &cur));
    std::uint64_t n = 0, total = 0;
    MDB_val k, v;
    int rc;
    for (rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == MDB_SUCCESS; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
      if (v.mv_size < kExpiryHeader || expired(v)) continue;
      ++n;
      total += v.mv_size - kExpiryHeader;
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND) check("mdb_cursor_get", rc);
    return {n, total};
  }

  std::shared_ptr<Env> env_;
  std::string ns_;
  MDB_dbi dbi_ = 0;
};

}  // namespace

std::unique_ptr<BlobBackend> make_lmdb_backend(const std::string& path, const std::string& name_space,
                                               std::uint64_t map_bytes) {
  if (path.empty()) throw bad_input("the LMDB cache needs a folder (location)");
  return std::make_unique<LmdbBackend>(open_env(path, map_bytes), name_space.empty() ? "default" : name_space);
}

}  // namespace inferprof
