#include "replay/model_updates.hpp"

#include <fmt/format.h>

#include <array>
#include <chrono>

#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/store.hpp"

namespace inferprof {

namespace {

// Versions that requests name explicitly ("m@v1") stay loaded, up to this many.
constexpr std::size_t kMaxPinned = 4;

double unix_ms() {
  using namespace std::chrono;
  return static_cast<double>(duration_cast<microseconds>(system_clock::now().time_since_epoch()).count()) / 1e3;
}

class FileSource final : public ModelSource {
 public:
  explicit FileSource(std::string path) : path_(std::move(path)) {}
  const std::string& name() const override { return path_; }
  bool versioned() const override { return false; }
  ModelBytes fetch(const std::string& /*version*/) override { return read_model_file(path_); }

 private:
  std::string path_;
};

std::uint32_t wait_name() {
  static const std::uint32_t id = NameTable::global().intern("wait");
  return id;
}

}  // namespace

std::unique_ptr<ModelSource> make_file_source(const std::string& path) {
  return std::make_unique<FileSource>(path);
}

ModelUpdates::ModelUpdates(Pipeline& pipeline, ModelSource& source, UpdateMode mode, const CacheSet* caches)
    : pipeline_(pipeline),
      source_(source),
      mode_(mode),
      caches_(caches),
      current_(model_info(*pipeline.active()).version) {
  if (mode_ == UpdateMode::async) async_thread_ = std::thread([this] { background(); });
}

ModelUpdates::~ModelUpdates() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  async_cv_.notify_all();
  if (async_thread_.joinable()) async_thread_.join();
  // Preloads still waiting for their lead time see stopping_ and end; the
  // running ones use source_ and pipeline_, which outlive this: wait for them.
  for (auto& [version, f] : preloads_)
    f.wait();
}

void ModelUpdates::read_ahead(const std::string& version, Nanos not_before) {
  if (mode_ != UpdateMode::preload) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (preloads_.count(version)) return;
  preloads_[version] = std::async(std::launch::async, [this, version, not_before] {
                         // Waits for its lead time, unless the replay ends first (then loads nothing).
                         {
                           std::unique_lock<std::mutex> lock(mutex_);
                           const Nanos wait = std::max<Nanos>(0, not_before - now_ns());
                           async_cv_.wait_for(lock, std::chrono::nanoseconds(wait), [&] { return stopping_; });
                           if (stopping_) throw runtime_failure("replay ended before the preload started");
                         }
                         return pipeline_.load(source_.fetch(version));
                       }).share();
}

void ModelUpdates::announce(const std::string& version) {
  std::size_t k;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (version == current_) return;
    Update& u = updates_.emplace_back();
    u.report.model = source_.name();
    u.report.from_version = current_;
    u.report.to_version = version;
    u.report.mode = std::string(enum_name(mode_));
    u.report.announced_ms = static_cast<double>(now_ns() - epoch_) / 1e6;
    current_ = version;
    k = updates_.size() - 1;
    announced_.store(static_cast<int>(k), std::memory_order_release);
    if (mode_ == UpdateMode::async) {
      async_queue_.push_back(k);
      async_cv_.notify_one();
      return;
    }
  }
  if (mode_ == UpdateMode::preload) {
    // Ready already: live at the announcement, nobody waits.
    std::unique_lock<std::mutex> lock(load_mutex_);
    std::shared_future<ModelHandle> f;
    {
      std::lock_guard<std::mutex> g(mutex_);
      auto it = preloads_.find(version);
      if (it != preloads_.end()) f = it->second;
    }
    if (f.valid() && f.wait_for(std::chrono::seconds(0)) == std::future_status::ready &&
        live_.load() < static_cast<int>(k))
      load_pending(nullptr, k);
  }
}

void ModelUpdates::background() {
  for (;;) {
    std::size_t k;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      async_cv_.wait(lock, [&] { return stopping_ || !async_queue_.empty(); });
      if (async_queue_.empty()) return;
      k = async_queue_.front();
      async_queue_.pop_front();
    }
    std::lock_guard<std::mutex> lock(load_mutex_);
    try {
      load_pending(nullptr, k);
    } catch (...) {
      // load_pending records failures itself; nothing may escape this thread.
    }
  }
}

// Brings every announced update up to k live, in order. Failures are
// recorded on their update; the old version keeps serving.
void ModelUpdates::load_pending(RequestRecord* record, std::size_t k) {
  for (std::size_t j = static_cast<std::size_t>(live_.load() + 1); j <= k; ++j) {
    Update* u;
    std::shared_future<ModelHandle> preload;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      u = &updates_[j];  // deque: the reference outlives the lock
      auto it = preloads_.find(u->report.to_version);
      if (it != preloads_.end()) preload = it->second;
    }
    try {
      ModelHandle model;
      if (preload.valid()) {
        std::optional<ScopedSpan> span;
        if (record) span.emplace(*record, Stage::load);
        model = preload.get();
      } else {
        ModelBytes bytes = source_.fetch(u->report.to_version);
        Nanos t0 = now_ns();
        model = pipeline_.load(bytes, record);
        u->report.fetch_ms = static_cast<double>(bytes.fetch_ns + bytes.verify_ns) / 1e6;
        u->report.deserialize_ms = static_cast<double>(now_ns() - t0) / 1e6;
      }
      const ModelInfo& info = model_info(*model);
      if (preload.valid()) {
        u->report.fetch_ms = info.load_ms;  // fetch + deserialise, done ahead
        u->report.deserialize_ms = 0;
      }
      u->report.served_by = info.served_by;
      go_live(j, model);
      std::lock_guard<std::mutex> lock(mutex_);
      preloads_.erase(u->report.to_version);  // live now: the pipeline holds it
    } catch (const std::exception& e) {
      // Any failure (unknown version, checksum, out of memory on the device):
      // recorded on the update; the old version keeps serving.
      u->report.error = e.what();
      u->failed.store(true, std::memory_order_release);
      live_.store(static_cast<int>(j), std::memory_order_release);
    }
  }
}

ModelUpdates::Update& ModelUpdates::at(std::size_t k) {
  std::lock_guard<std::mutex> lock(mutex_);
  return updates_[k];
}

void ModelUpdates::go_live(std::size_t k, const ModelHandle& model) {
  // The version leaving is the one serving now (not from_version, which an
  // earlier failed update may have left unloaded).
  const std::string leaving = model_info(*pipeline_.active()).version;
  pipeline_.activate(model);
  Update& u = at(k);
  u.report.live_ms = static_cast<double>(now_ns() - epoch_) / 1e6;
  u.report.live_unix_ms = unix_ms();
  live_.store(static_cast<int>(k), std::memory_order_release);
  // The old version's results can no longer be asked for (unless a request
  // names it): drop them, here and in a shared Redis.
  if (caches_) {
    const std::uint32_t tag = version_tag(leaving);
    for (CacheTier* tier : {caches_->l1, caches_->l2})
      if (tier) u.report.invalidated += tier->invalidate(tag);
  }
}

ModelHandle ModelUpdates::begin_request(RequestRecord& record, const TraceRequest& request) {
  const int k = announced_.load(std::memory_order_acquire);
  record.update = k;
  record.update_pending = k > live_.load(std::memory_order_acquire);
  if (!request.model.empty()) {
    parse_model_ref(request.model, fmt::format("request {}: model", request.id));
    const auto at = request.model.find('@');
    const std::string name = request.model.substr(0, at);
    if (name != source_.name())
      throw bad_input(fmt::format("request {} names model '{}', but this replay serves '{}'", request.id,
                                  printable(name), source_.name()));
    if (at != std::string::npos) {
      const std::string version = request.model.substr(at + 1);
      if (ModelHandle active = pipeline_.active(); model_info(*active).version == version) return active;
      std::unique_lock<std::mutex> lock(mutex_);
      if (auto it = pinned_.find(version); it != pinned_.end()) return it->second;
      lock.unlock();
      // Not held: this request loads it (its own `load` stage), like a cold start.
      ModelHandle model = pipeline_.load(source_.fetch(version), &record);
      lock.lock();
      if (pinned_.size() >= kMaxPinned) pinned_.erase(pinned_.begin());
      pinned_[version] = model;
      return model;
    }
  }
  if (record.update_pending && mode_ != UpdateMode::async) {
    const Nanos t0 = now_ns();
    std::unique_lock<std::mutex> lock(load_mutex_);
    if (live_.load() < k) {
      load_pending(&record, static_cast<std::size_t>(k));
    } else {
      // Another request did the load while this one waited for it.
      const std::int32_t load = record.add(name_id(Stage::load), -1, t0, now_ns() - t0);
      record.add(wait_name(), load, t0, now_ns() - t0);
    }
    Update& u = at(static_cast<std::size_t>(k));  // stall counts: under load_mutex_
    u.report.stalled += 1;
    u.report.stall_ms += static_cast<double>(now_ns() - t0) / 1e6;
  }
  return nullptr;
}

void ModelUpdates::end_request(const RequestRecord& record, const TraceRequest& request) {
  if (record.update < 0 || request.model.find('@') != std::string::npos) return;
  Update& u = at(static_cast<std::size_t>(record.update));
  if (record.model_version != u.report.to_version && !u.failed.load(std::memory_order_acquire))
    u.stale.fetch_add(1, std::memory_order_relaxed);
}

std::vector<UpdateReport> ModelUpdates::finish() {
  // Async loads still queued or running finish first (their live time may
  // fall after the last request: it is reported as it happened).
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  async_cv_.notify_all();
  if (async_thread_.joinable()) async_thread_.join();
  std::vector<UpdateReport> out;
  std::lock_guard<std::mutex> lock(mutex_);
  for (Update& u : updates_) {
    u.report.stale_served = u.stale.load();
    out.push_back(u.report);
  }
  return out;
}

}  // namespace inferprof
