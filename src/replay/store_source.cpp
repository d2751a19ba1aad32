// A replay's models from the model store: versions by name, fetched through
// memory -> Redis -> remote and verified there; the fetch and verify times
// the store measured become the `load` stage's first children.
#include "inferprof/error.hpp"
#include "inferprof/replay.hpp"
#include "inferprof/store.hpp"
#include "replay/model_updates.hpp"

namespace inferprof {

namespace {

class StoreSource final : public ModelSource {
 public:
  StoreSource(const RunConfig& config, std::string name) : name_(std::move(name)), store_(options(config)) {}

  const std::string& name() const override { return name_; }
  bool versioned() const override { return true; }

  ModelBytes fetch(const std::string& version) override {
    FetchedModel f = store_.fetch(ModelRef{name_, version});
    ModelBytes m;
    m.name = f.ref.name;
    m.version = f.ref.version;
    m.bytes = f.bytes;
    m.served_by = std::string(store_tier_name(f.tier));
    m.fetch_ns = f.fetch_ns;
    m.verify_ns = f.verify_ns;
    return m;
  }

 private:
  static StoreOptions options(const RunConfig& config) {
    StoreOptions o;
    o.remote_url = config.store.url;
    o.redis_url = config.store.redis_url;
    o.zstd = config.store.zstd;
    return o;
  }

  std::string name_;
  ModelStore store_;
};

}  // namespace

std::unique_ptr<ModelSource> make_store_source(const RunConfig& config, const std::string& name) {
  // Validates the name (and the version, if any) with the store's own rules.
  parse_model_ref(config.model_path, "model");
  return std::make_unique<StoreSource>(config, name);
}

}  // namespace inferprof
