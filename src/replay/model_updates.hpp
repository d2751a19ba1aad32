#pragma once
// Model versions during a replay: where their bytes come from (a plain file,
// or the model store), and the `model_update` events that switch the version
// in one of three modes:
//   sync     the next request after the announcement loads the new version
//            itself; requests arriving meanwhile wait (all of it is `load`).
//   async    a background thread loads it while the old version keeps
//            serving (those requests are counted stale), then swaps.
//   preload  fetching and deserialising start ahead of the event: in open
//            loop a lead time before its ts_ms, in closed loop when the replay
//            reads it (ahead of the requests queued before it); at the
//            announcement the ready version goes live at once, or requests
//            wait for the rest.
// Result caches key on the version, so an old version's results are never
// served for the new one; after a swap the old version's entries are dropped
// from L1/L2 (in Redis, by key prefix).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "inferprof/pipeline.hpp"
#include "inferprof/profile.hpp"
#include "inferprof/report.hpp"

namespace inferprof {

// Where a replay's model versions come from. Thread-safe.
class ModelSource {
 public:
  virtual ~ModelSource() = default;
  virtual const std::string& name() const = 0;  // the model's name (a plain file: its path)
  virtual bool versioned() const = 0;           // false: one file, updates cannot apply
  // The model's bytes, fetched and verified. `version` empty: the current one.
  // Throws Error (bad_input for an unknown version).
  virtual ModelBytes fetch(const std::string& version) = 0;
};
std::unique_ptr<ModelSource> make_file_source(const std::string& path);
struct RunConfig;
// The model `name` in config.store_url, through the store's memory (and, with
// config.store_redis_url, Redis) tiers.
std::unique_ptr<ModelSource> make_store_source(const RunConfig& config, const std::string& name);

class ModelUpdates {
 public:
  ModelUpdates(Pipeline& pipeline, ModelSource& source, UpdateMode mode, const CacheSet* caches);
  ~ModelUpdates();  // waits for background loads
  ModelUpdates(const ModelUpdates&) = delete;
  ModelUpdates& operator=(const ModelUpdates&) = delete;

  // Times in the reports are relative to this (the replay's start).
  void set_epoch(Nanos epoch) { epoch_ = epoch; }
  // The replay read an update event (the producer, ahead of the requests).
  // Preload starts fetching it at `not_before` (now_ns() clock; 0: at once).
  void read_ahead(const std::string& version, Nanos not_before = 0);
  // The update takes effect now: its place in the trace was reached, or a
  // replica's broadcast arrived. A version already current is ignored.
  void announce(const std::string& version);
  // Before serving a request (after its start time is set): tags the record
  // with the update phase, and in sync/preload mode makes it wait for (or do)
  // a pending load, recorded as its `load` stage. A request naming a version
  // ("m@v1") gets that version (loaded if needed). Returns the model to serve
  // with (nullptr: the active one). Throws Error(bad_input) for a request
  // naming another model.
  ModelHandle begin_request(RequestRecord& record, const TraceRequest& request);
  // After serving: counts requests served stale.
  void end_request(const RequestRecord& record, const TraceRequest& request);
  // Waits for loads in flight; the reports of every announced update, in order.
  std::vector<UpdateReport> finish();

 private:
  struct Update {
    UpdateReport report;
    std::atomic<std::uint64_t> stale{0};
    std::atomic<bool> failed{false};  // the load failed: the old version kept serving, nothing is stale
  };
  Update& at(std::size_t k);                                // takes mutex_
  void go_live(std::size_t k, const ModelHandle& model);    // load_mutex_ held
  void load_pending(RequestRecord* record, std::size_t k);  // load_mutex_ held
  void background();

  Pipeline& pipeline_;
  ModelSource& source_;
  const UpdateMode mode_;
  const CacheSet* caches_;
  Nanos epoch_ = 0;

  std::mutex mutex_;            // guards updates_ growth, preloads_, pinned_
  std::deque<Update> updates_;  // deque: references stay valid as it grows
  std::string current_;         // the newest announced version
  std::atomic<int> announced_{-1};
  std::atomic<int> live_{-1};
  std::mutex load_mutex_;  // one load at a time; waiters stall on it
  std::map<std::string, std::shared_future<ModelHandle>> preloads_;
  std::map<std::string, ModelHandle> pinned_;  // versions requests named explicitly
  std::deque<std::size_t> async_queue_;
  std::condition_variable async_cv_;
  bool stopping_ = false;
  std::thread async_thread_;
};

}  // namespace inferprof
