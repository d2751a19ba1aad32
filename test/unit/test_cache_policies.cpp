// The eviction policies added after lru/lfu/fifo/ttl (clock, sieve, s3fifo,
// arc, wtinylfu, 2q, slru): each against a brute-force model written from the
// semantics its header states, on random traces, and on short hand-checked
// sequences; their parameters as a tier spec spells them.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "cache/policy_cache.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "sanitized.hpp"

using namespace inferprof;

namespace {

struct Nothing {};

CacheKey k(std::uint64_t i) {
  return CacheKey{i % 5, i};
}

// ---- Brute-force models: deques of entries, victims found by walking ----------

struct Item {
  CacheKey key;
  std::uint64_t bytes = 0;
  unsigned uses = 0;
};
using Queue = std::deque<Item>;  // oldest first

// Finds a key in any of `queues`; {queue index, position} or {-1, -1}.
std::pair<int, std::ptrdiff_t> locate(const std::vector<const Queue*>& queues, const CacheKey& key) {
  for (std::size_t q = 0; q < queues.size(); ++q)
    for (std::size_t i = 0; i < queues[q]->size(); ++i)
      if ((*queues[q])[i].key == key) return {static_cast<int>(q), static_cast<std::ptrdiff_t>(i)};
  return {-1, -1};
}

// What every model shares: the limit (entries, or bytes under a byte limit),
// read-through gets, replacing puts, erases, and the held keys.
class Model {
 public:
  Model(std::uint64_t cap, bool by_bytes) : cap_(cap), by_bytes_(by_bytes) {}
  virtual ~Model() = default;
  std::uint64_t units(const Item& e) const { return by_bytes_ ? e.bytes : 1; }
  std::uint64_t held() const {
    std::uint64_t n = 0;
    for (const Queue* q : queues())
      for (const Item& e : *q)
        n += units(e);
    return n;
  }
  bool contains(const CacheKey& key) const { return locate(queues(), key).first >= 0; }
  bool get(const CacheKey& key) {
    const auto [q, i] = locate(queues(), key);
    if (q < 0) return false;
    on_hit(q, i);
    return true;
  }
  void put(const CacheKey& key, std::uint64_t bytes) {
    if (by_bytes_ && bytes > cap_) {
      erase(key);  // too big to hold: the older value goes too
      return;
    }
    const auto [q, i] = locate(queues(), key);
    if (q >= 0) {
      mutable_queue(q)[static_cast<std::size_t>(i)].bytes = bytes;
      on_hit(q, i);
      while (held() > cap_ || more_)
        evict_one(key);
      return;
    }
    on_admit(key, by_bytes_ ? bytes : 1);
    while (held() + (by_bytes_ ? bytes : 1) > cap_ || more_)
      evict_one(std::nullopt);
    on_insert(Item{key, bytes, 0});
  }
  bool erase(const CacheKey& key) {
    const auto [q, i] = locate(queues(), key);
    if (q < 0) return false;
    on_erase(q, i);
    Queue& queue = mutable_queue(q);
    queue.erase(queue.begin() + i);
    return true;
  }
  std::uint64_t evictions = 0;

 protected:
  virtual std::vector<const Queue*> queues() const = 0;
  virtual Queue& mutable_queue(int q) = 0;
  virtual void on_hit(int q, std::ptrdiff_t i) = 0;
  virtual void on_admit(const CacheKey&, std::uint64_t) {}
  virtual void on_insert(Item e) = 0;
  virtual void on_erase(int, std::ptrdiff_t) {}
  // Removes the victim (never `skip`) from its queue; returns it and its queue.
  virtual std::pair<int, Item> evict(std::optional<CacheKey> skip) = 0;
  void evict_one(std::optional<CacheKey> skip) {
    evict(skip);
    ++evictions;
  }
  std::uint64_t cap_;
  bool by_bytes_;
  bool more_ = false;
};

// The first item of `q` that is not `skip`, removed; false if there is none.
bool take_first(Queue& q, std::optional<CacheKey> skip, Item& out) {
  for (auto it = q.begin(); it != q.end(); ++it) {
    if (skip && it->key == *skip) continue;
    out = *it;
    q.erase(it);
    return true;
  }
  return false;
}

class ClockModel : public Model {
 public:
  ClockModel(std::uint64_t cap, bool by_bytes, unsigned bits) : Model(cap, by_bytes), max_((1u << bits) - 1) {}

 protected:
  std::vector<const Queue*> queues() const override { return {&q_}; }
  Queue& mutable_queue(int) override { return q_; }
  void on_hit(int, std::ptrdiff_t i) override {
    Item& e = q_[static_cast<std::size_t>(i)];
    e.uses = std::min(e.uses + 1, max_);
  }
  void on_insert(Item e) override { q_.push_back(e); }
  std::pair<int, Item> evict(std::optional<CacheKey> skip) override {
    while (true) {
      Item e = q_.front();
      q_.pop_front();
      const bool skipped = skip && e.key == *skip;
      if (!skipped && e.uses == 0) return {0, e};
      if (!skipped) --e.uses;
      q_.push_back(e);
    }
  }

 private:
  unsigned max_;
  Queue q_;
};

class SieveModel : public Model {
 public:
  using Model::Model;

 protected:
  std::vector<const Queue*> queues() const override { return {&q_}; }
  Queue& mutable_queue(int) override { return q_; }
  void on_hit(int, std::ptrdiff_t i) override { q_[static_cast<std::size_t>(i)].uses = 1; }
  void on_insert(Item e) override { q_.push_back(e); }
  void on_erase(int, std::ptrdiff_t i) override {
    if (i < hand_) {
      --hand_;
    } else if (i == hand_ && hand_ + 1 == static_cast<std::ptrdiff_t>(q_.size())) {
      hand_ = -1;  // the newest went: start again at the oldest
    }
  }
  std::pair<int, Item> evict(std::optional<CacheKey> skip) override {
    std::size_t i = hand_ < 0 ? 0 : static_cast<std::size_t>(hand_);
    while ((skip && q_[i].key == *skip) || q_[i].uses != 0) {
      if (!(skip && q_[i].key == *skip)) q_[i].uses = 0;
      i = (i + 1) % q_.size();
    }
    const Item e = q_[i];
    q_.erase(q_.begin() + static_cast<std::ptrdiff_t>(i));
    hand_ = i < q_.size() ? static_cast<std::ptrdiff_t>(i) : -1;
    return {0, e};
  }

 private:
  Queue q_;
  std::ptrdiff_t hand_ = -1;  // index of the entry the hand points at; -1: the oldest
};

// Keys with their units, oldest first, trimmed to a capacity (0: unbounded).
struct GhostModel {
  std::deque<std::pair<CacheKey, std::uint64_t>> keys;
  std::uint64_t cap = 0;
  std::uint64_t units() const {
    std::uint64_t n = 0;
    for (const auto& e : keys)
      n += e.second;
    return n;
  }
  bool take(const CacheKey& key) {
    for (auto it = keys.begin(); it != keys.end(); ++it)
      if (it->first == key) {
        keys.erase(it);
        return true;
      }
    return false;
  }
  void add(const CacheKey& key, std::uint64_t u) {
    if (cap != 0 && u > cap) return;
    keys.emplace_back(key, u);
    while (cap != 0 && units() > cap)
      keys.pop_front();
  }
};

std::uint64_t units_of(const Queue& q, bool by_bytes) {
  std::uint64_t n = 0;
  for (const Item& e : q)
    n += by_bytes ? e.bytes : 1;
  return n;
}

class S3FifoModel : public Model {
 public:
  S3FifoModel(std::uint64_t cap, bool by_bytes, const PolicyParams& p) : Model(cap, by_bytes), threshold_(p.threshold) {
    small_cap_ = static_cast<std::uint64_t>(static_cast<double>(cap) * p.small);
    main_cap_ = cap - small_cap_;
    ghost_.cap = static_cast<std::uint64_t>(static_cast<double>(cap) * p.ghost);
  }

 protected:
  std::vector<const Queue*> queues() const override { return {&small_, &main_}; }
  Queue& mutable_queue(int q) override { return q == 0 ? small_ : main_; }
  void on_hit(int q, std::ptrdiff_t i) override {
    Item& e = mutable_queue(q)[static_cast<std::size_t>(i)];
    e.uses = std::min(e.uses + 1, 255u);
  }
  void on_admit(const CacheKey& key, std::uint64_t) override { from_ghost_ = ghost_.cap != 0 && ghost_.take(key); }
  void on_insert(Item e) override { (from_ghost_ ? main_ : small_).push_back(e); }
  std::pair<int, Item> evict(std::optional<CacheKey> skip) override {
    const bool main_only_skip = main_.size() == 1 && skip && main_.front().key == *skip;
    if ((units_of(main_, by_bytes_) <= main_cap_ || main_only_skip) && !small_.empty()) {
      while (!small_.empty()) {
        Item e = small_.front();
        small_.pop_front();
        if (!(skip && e.key == *skip) && e.uses < threshold_) {
          if (ghost_.cap != 0) ghost_.add(e.key, units(e));
          return {0, e};
        }
        e.uses = 0;
        main_.push_back(e);
      }
    }
    while (true) {
      Item e = main_.front();
      main_.pop_front();
      const bool skipped = skip && e.key == *skip;
      if (!skipped && e.uses == 0) return {1, e};
      if (!skipped) e.uses = std::min(e.uses, 3u) - 1;
      main_.push_back(e);
    }
  }

 private:
  unsigned threshold_;
  std::uint64_t small_cap_, main_cap_;
  Queue small_, main_;
  GhostModel ghost_;
  bool from_ghost_ = false;
};

class ArcModel : public Model {
 public:
  using Model::Model;

 protected:
  std::vector<const Queue*> queues() const override { return {&t1_, &t2_}; }
  Queue& mutable_queue(int q) override { return q == 0 ? t1_ : t2_; }
  void on_hit(int q, std::ptrdiff_t i) override {
    Queue& from = mutable_queue(q);
    const Item e = from[static_cast<std::size_t>(i)];
    from.erase(from.begin() + i);
    t2_.push_back(e);
  }
  void on_admit(const CacheKey& key, std::uint64_t u) override {
    incoming_ = u;
    in_b1_ = in_b2_ = false;
    const double b1 = static_cast<double>(b1_.units()), b2 = static_cast<double>(b2_.units());
    if (b1_.take(key)) {
      p_ = std::min(p_ + std::max(b2 / b1, 1.0), static_cast<double>(cap_));
      in_b1_ = true;
    } else if (b2_.take(key)) {
      p_ = std::max(p_ - std::max(b1 / b2, 1.0), 0.0);
      in_b2_ = true;
    }
  }
  void on_insert(Item e) override {
    (in_b1_ || in_b2_ ? t2_ : t1_).push_back(e);
    in_b1_ = in_b2_ = false;
  }
  std::pair<int, Item> evict(std::optional<CacheKey> skip) override {
    const std::uint64_t t1 = units_of(t1_, by_bytes_), t2 = units_of(t2_, by_bytes_);
    bool ghost = true;
    bool from_t1 = false;
    if (!in_b1_ && !in_b2_ && t1 + b1_.units() + incoming_ > cap_ && b1_.units() == 0) {
      ghost = false;
      from_t1 = true;
    } else {
      if (!in_b1_ && !in_b2_ && t1 + b1_.units() + incoming_ > cap_) {
        b1_.keys.pop_front();
      } else if (!in_b1_ && !in_b2_ && t1 + b1_.units() + t2 + b2_.units() >= 2 * cap_ && b2_.units() > 0) {
        b2_.keys.pop_front();
      }
      const double t1d = static_cast<double>(t1);
      from_t1 = (t1 > 0 && (t1d > p_ || (t1d == p_ && in_b2_))) || t2 == 0;
    }
    Item e;
    int q = from_t1 ? 0 : 1;
    if (!take_first(mutable_queue(q), skip, e)) {
      q = 1 - q;
      REQUIRE(take_first(mutable_queue(q), skip, e));
    }
    if (ghost) (q == 0 ? b1_ : b2_).add(e.key, units(e));
    return {q, e};
  }

 private:
  Queue t1_, t2_;  // least recently used first
  GhostModel b1_, b2_;
  double p_ = 0;
  std::uint64_t incoming_ = 1;
  bool in_b1_ = false, in_b2_ = false;
};

class WTinyLfuModel : public Model {
 public:
  WTinyLfuModel(std::uint64_t cap, bool by_bytes, const PolicyParams& p)
      : Model(cap, by_bytes),
        window_cap_(static_cast<std::uint64_t>(static_cast<double>(cap) * p.window)),
        main_cap_(cap - window_cap_),
        protected_cap_(static_cast<std::uint64_t>(static_cast<double>(main_cap_) * p.protected_share)),
        sketch_(main_cap_) {}

 protected:
  std::vector<const Queue*> queues() const override { return {&window_, &probation_, &protected_}; }
  Queue& mutable_queue(int q) override { return q == 0 ? window_ : q == 1 ? probation_ : protected_; }
  void on_hit(int q, std::ptrdiff_t i) override {
    Queue& from = mutable_queue(q);
    const Item e = from[static_cast<std::size_t>(i)];
    from.erase(from.begin() + i);
    if (q == 0) {
      window_.push_back(e);
      return;
    }
    protected_.push_back(e);
    // Only a promotion pushes protected's LRU back to probation.
    while (q == 1 && units_of(protected_, by_bytes_) > protected_cap_) {
      probation_.push_back(protected_.front());
      protected_.pop_front();
    }
    sketch_.add(e.key);
    if (++main_hits_ >= 32 * std::max<std::uint64_t>(main_cap_, 1)) {
      main_hits_ = 0;
      sketch_.halve();
    }
  }
  void on_insert(Item e) override {
    window_.push_back(e);
    sketch_.add(e.key);
  }
  void to_main(const Item& e) {
    const bool probation = units_of(probation_, by_bytes_) + units(e) <= main_cap_ - protected_cap_ ||
                           units_of(protected_, by_bytes_) + units(e) > protected_cap_;
    (probation ? probation_ : protected_).push_back(e);
  }
  std::pair<int, Item> evict(std::optional<CacheKey> skip) override {
    if (pending_) {
      Item w;
      REQUIRE(take_first(window_, skip, w));  // the window's oldest, as it was weighed
      to_main(w);
      pending_ = false;
    }
    more_ = false;
    while (true) {
      Item w, m;
      if (!take_first(window_, skip, w)) {
        if (!take_first(probation_, skip, m)) REQUIRE(take_first(protected_, skip, m));
        return {1, m};
      }
      if (units_of(probation_, by_bytes_) + units_of(protected_, by_bytes_) + units(w) <= main_cap_) {
        to_main(w);
        sketch_.add(w.key);
        continue;
      }
      Queue& victims = !probation_.empty() && !(probation_.size() == 1 && skip && probation_.front().key == *skip)
                           ? probation_
                           : protected_;
      const bool found = take_first(victims, skip, m);
      const bool admit = found && sketch_.estimate(w.key) > sketch_.estimate(m.key);
      sketch_.add(w.key);
      if (!admit) {
        if (found) victims.push_front(m);
        return {0, w};
      }
      window_.push_front(w);  // moved once its rival has gone
      pending_ = more_ = true;
      return {1, m};
    }
  }

 private:
  std::uint64_t window_cap_, main_cap_, protected_cap_;
  Queue window_, probation_, protected_;
  policy::FrequencySketch sketch_;
  std::uint64_t main_hits_ = 0;
  bool pending_ = false;
};

class TwoQModel : public Model {
 public:
  TwoQModel(std::uint64_t cap, bool by_bytes, const PolicyParams& p)
      : Model(cap, by_bytes), in_cap_(static_cast<std::uint64_t>(static_cast<double>(cap) * p.in_share)) {
    main_cap_ = cap - in_cap_;
    out_.cap = static_cast<std::uint64_t>(static_cast<double>(cap) * p.out_share);
  }

 protected:
  std::vector<const Queue*> queues() const override { return {&in_, &main_}; }
  Queue& mutable_queue(int q) override { return q == 0 ? in_ : main_; }
  void on_hit(int q, std::ptrdiff_t i) override {
    incoming_ = 0;
    if (q == 0) return;  // A1in is a FIFO
    const Item e = main_[static_cast<std::size_t>(i)];
    main_.erase(main_.begin() + i);
    main_.push_back(e);
  }
  void on_admit(const CacheKey& key, std::uint64_t u) override {
    to_main_ = out_.cap != 0 && out_.take(key);
    incoming_ = u;
    update_more();
  }
  void on_insert(Item e) override {
    (to_main_ ? main_ : in_).push_back(e);
    to_main_ = more_ = false;
    incoming_ = 0;
  }
  std::pair<int, Item> evict(std::optional<CacheKey> skip) override {
    // The cache's limit: A1in's oldest if A1in is over its share, else Am's
    // LRU; past the limit (a key from A1out, Am full): Am's LRU.
    const bool full = held() + incoming_ > cap_;
    const int first = full && units_of(in_, by_bytes_) > in_cap_ ? 0 : 1;
    Item e;
    int q = first;
    if (!take_first(mutable_queue(first), skip, e)) {
      q = 1 - first;
      REQUIRE(take_first(mutable_queue(q), skip, e));
    }
    if (q == 0 && out_.cap != 0) out_.add(e.key, units(e));
    update_more();
    return {q, e};
  }

 private:
  void update_more() { more_ = to_main_ && !main_.empty() && units_of(main_, by_bytes_) + incoming_ > main_cap_; }
  std::uint64_t in_cap_, main_cap_ = 0, incoming_ = 0;
  Queue in_, main_;
  GhostModel out_;
  bool to_main_ = false;
};

class SlruModel : public Model {
 public:
  SlruModel(std::uint64_t cap, bool by_bytes, unsigned segments)
      : Model(cap, by_bytes), segs_(segments), caps_(segments, cap / segments) {
    caps_[0] += cap % segments;
  }

 protected:
  std::vector<const Queue*> queues() const override {
    std::vector<const Queue*> out;
    for (const Queue& q : segs_)
      out.push_back(&q);
    return out;
  }
  Queue& mutable_queue(int q) override { return segs_[static_cast<std::size_t>(q)]; }
  void on_hit(int q, std::ptrdiff_t i) override {
    const auto s = static_cast<std::size_t>(q);
    const Item e = segs_[s][static_cast<std::size_t>(i)];
    segs_[s].erase(segs_[s].begin() + i);
    const std::size_t to = std::min(s + 1, segs_.size() - 1);
    segs_[to].push_back(e);
    while (to != s && units_of(segs_[to], by_bytes_) > caps_[to])
      demote(to);
  }
  void on_admit(const CacheKey&, std::uint64_t u) override {
    target_ = 0;
    for (std::size_t s = segs_.size(); s-- > 0;)
      if (units_of(segs_[s], by_bytes_) + u <= caps_[s]) target_ = s;
  }
  void on_insert(Item e) override { segs_[target_].push_back(e); }
  std::pair<int, Item> evict(std::optional<CacheKey> skip) override {
    Item e;
    for (std::size_t s = 0; s < segs_.size(); ++s)
      if (take_first(segs_[s], skip, e)) return {static_cast<int>(s), e};
    FAIL("nothing to evict");
    return {0, e};
  }

 private:
  // Segment s's LRU to the most recent end of s - 1, which passes its own on
  // while over its share (segment 0 keeps any excess).
  void demote(std::size_t s) {
    segs_[s - 1].push_back(segs_[s].front());
    segs_[s].pop_front();
    while (s - 1 > 0 && units_of(segs_[s - 1], by_bytes_) > caps_[s - 1])
      demote(s - 1);
  }
  std::vector<Queue> segs_;  // each least recently used first
  std::vector<std::uint64_t> caps_;
  std::size_t target_ = 0;
};

std::unique_ptr<Model> model_of(Policy p, std::uint64_t cap, bool by_bytes, const PolicyParams& params) {
  switch (p) {
    case Policy::clock:
      return std::make_unique<ClockModel>(cap, by_bytes, params.bits);
    case Policy::sieve:
      return std::make_unique<SieveModel>(cap, by_bytes);
    case Policy::s3fifo:
      return std::make_unique<S3FifoModel>(cap, by_bytes, params);
    case Policy::arc:
      return std::make_unique<ArcModel>(cap, by_bytes);
    case Policy::twoq:
      return std::make_unique<TwoQModel>(cap, by_bytes, params);
    case Policy::slru:
      return std::make_unique<SlruModel>(cap, by_bytes, params.segments);
    default:
      return std::make_unique<WTinyLfuModel>(cap, by_bytes, params);
  }
}

struct Run {
  Policy policy;
  std::uint64_t cap;
  bool by_bytes, zipf;
  PolicyParams params;
  std::uint64_t seed;
};

// One random trace through PolicyCache and the model: read-through gets,
// replacing puts and erases; "" if they agree on every hit, every eviction
// count and the keys held throughout, else the first difference.
std::string compare(const Run& r, int ops) {
  constexpr std::uint64_t kMaxItem = 16;
  const std::uint64_t cap = r.by_bytes ? r.cap * kMaxItem / 2 : r.cap;
  PolicyCache<Nothing> cache(r.policy, r.by_bytes ? 0 : cap, r.by_bytes ? cap : 0, 0, r.params);
  const std::unique_ptr<Model> model = model_of(r.policy, cap, r.by_bytes, r.params);
  std::mt19937_64 rng(r.seed);
  const std::uint64_t universe = 3 * r.cap + 3;
  auto draw = [&] {
    // A skew toward low keys (min of two uniforms) stands in for Zipf.
    const std::uint64_t a = rng() % universe, b = rng() % universe;
    return r.zipf ? std::min(a, b) : a;
  };
  for (int op = 0; op < ops; ++op) {
    const CacheKey key = k(draw());
    const std::uint64_t bytes = 1 + rng() % kMaxItem;
    const std::uint64_t kind = rng() % 20;
    if (kind < 16) {
      const bool a = cache.get(key, 0) != nullptr, b = model->get(key);
      if (a != b) return fmt::format("op {}: hit {} vs model {}", op, a, b);
      if (!a) {
        cache.put(key, Nothing{}, bytes, 0);
        model->put(key, bytes);
      }
    } else if (kind < 19) {
      cache.put(key, Nothing{}, bytes, 0);
      model->put(key, bytes);
    } else if (cache.erase(key) != model->erase(key)) {
      return fmt::format("op {}: erase differs", op);
    }
    if (cache.evictions() != model->evictions)
      return fmt::format("op {}: {} evictions vs model {}", op, cache.evictions(), model->evictions);
    for (std::uint64_t x = 0; x < universe; ++x)
      if (cache.contains(k(x)) != model->contains(k(x)))
        return fmt::format("op {}: key {} held {} vs model {}", op, x, cache.contains(k(x)), model->contains(k(x)));
  }
  return "";
}

std::vector<PolicyParams> params_to_try(Policy p) {
  std::vector<PolicyParams> out(1);
  PolicyParams q;
  if (p == Policy::clock) {
    q.bits = 2;
    out.push_back(q);
  } else if (p == Policy::s3fifo) {
    q.small = 0.25;
    q.threshold = 1;
    q.ghost = 0.5;
    out.push_back(q);
  } else if (p == Policy::wtinylfu) {
    q.window = 0.2;
    q.protected_share = 0.5;
    out.push_back(q);
  } else if (p == Policy::twoq) {
    q.in_share = 0.5;
    q.out_share = 1.5;
    out.push_back(q);
  } else if (p == Policy::slru) {
    q.segments = 3;  // segment 0 takes the remainder at most capacities
    out.push_back(q);
    q.segments = 1;  // plain LRU
    out.push_back(q);
  }
  return out;
}

template <class F>
void hand_trace(Policy p, std::uint64_t cap, F&& steps, const PolicyParams& params = {}) {
  PolicyCache<Nothing> c(p, cap, 0, 0, params);
  steps(c);
}

void put(PolicyCache<Nothing>& c, std::uint64_t key) {
  c.put(k(key), Nothing{}, 1, 0);
}
bool get(PolicyCache<Nothing>& c, std::uint64_t key) {
  return c.get(k(key), 0) != nullptr;
}

// The array as it was: every counter allocated up front (the reference the sparse start must equal).
struct DenseSketch {
  std::vector<std::uint32_t> c;
  explicit DenseSketch(std::uint64_t keys)
      : c(std::max<std::size_t>(20, static_cast<std::size_t>(std::ceil(14.37758 * static_cast<double>(keys))))) {}
  template <class F>
  void each(const CacheKey& key, F&& f) {
    std::uint64_t h = key.lo ^ (key.hi * 0x9E3779B97F4A7C15ull);
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    const auto a = static_cast<std::uint32_t>(h), b = static_cast<std::uint32_t>(h >> 32);
    for (std::uint32_t j = 0; j < 10; ++j)
      f(c[(a + j * b) % static_cast<std::uint32_t>(c.size())]);
  }
  void add(const CacheKey& key) {
    each(key, [](std::uint32_t& x) { x += x != UINT32_MAX; });
  }
  std::uint32_t estimate(const CacheKey& key) {
    std::uint32_t m = UINT32_MAX;
    each(key, [&m](std::uint32_t& x) { m = std::min(m, x); });
    return m;
  }
};

}  // namespace

TEST_SUITE("cache policies") {
  TEST_CASE("each new policy matches its brute-force model on random traces") {
    std::uint64_t seed = 7;
    int runs = 0;
    for (Policy p :
         {Policy::clock, Policy::sieve, Policy::s3fifo, Policy::arc, Policy::wtinylfu, Policy::twoq, Policy::slru})
      for (const PolicyParams& params : params_to_try(p))
        for (std::uint64_t cap : {1, 4, 10, 40, 120})
          for (bool by_bytes : {false, true})
            for (bool zipf : {false, true}) {
              const Run r{p, cap, by_bytes, zipf, params, seed++};
              // Under the sanitizers 600 operations a trace: they look for memory errors, which the
              // first evictions of every policy and size reach; the plain build checks all 3,000.
              const std::string diff = compare(r, kSanitized ? 600 : 3000);
              ++runs;
              if (!diff.empty())
                FAIL_CHECK(fmt::format("{} cap {} {} {}: {}", policy_label(p, params), cap,
                                       by_bytes ? "bytes" : "entries", zipf ? "skewed" : "uniform", diff));
            }
    CHECK(runs == 13 * 5 * 2 * 2);
  }

  TEST_CASE("clock: a referenced entry gets a second chance") {
    hand_trace(Policy::clock, 2, [](PolicyCache<Nothing>& c) {
      put(c, 1);
      put(c, 2);
      CHECK(get(c, 1));
      put(c, 3);  // 1 loses its bit and goes to the back; 2 goes
      CHECK(c.contains(k(1)));
      CHECK_FALSE(c.contains(k(2)));
      put(c, 4);  // 1 has no bit left now: it goes before 3
      CHECK_FALSE(c.contains(k(1)));
      CHECK(c.contains(k(3)));
    });
  }

  TEST_CASE("sieve: the hand stays where it stopped") {
    hand_trace(Policy::sieve, 3, [](PolicyCache<Nothing>& c) {
      put(c, 1);
      put(c, 2);
      put(c, 3);
      CHECK(get(c, 1));
      put(c, 4);  // 1 visited: spared (bit cleared); 2 goes; the hand rests at 3
      CHECK_FALSE(c.contains(k(2)));
      CHECK(get(c, 3));
      put(c, 5);  // 3 visited: spared; 4 goes -- not 1, which a restart from the oldest would take
      CHECK(c.contains(k(1)));
      CHECK(c.contains(k(3)));
      CHECK_FALSE(c.contains(k(4)));
    });
  }

  TEST_CASE("s3fifo: one-hit wonders leave through small into the ghost, and a ghost hit enters main") {
    hand_trace(Policy::s3fifo, 10, [](PolicyCache<Nothing>& c) {
      for (std::uint64_t i = 1; i <= 10; ++i)
        put(c, i);
      CHECK(get(c, 3));
      CHECK(get(c, 3));
      put(c, 11);  // small's oldest, 1, had no use: evicted to the ghost
      CHECK_FALSE(c.contains(k(1)));
      CHECK_FALSE(get(c, 1));
      put(c, 1);  // from the ghost: into main; small's oldest, 2, goes
      CHECK(c.contains(k(1)));
      CHECK_FALSE(c.contains(k(2)));
      put(c, 12);  // 3 had two uses: moved to main; 4 goes
      CHECK(c.contains(k(3)));
      CHECK_FALSE(c.contains(k(4)));
      CHECK(c.evictions() == 3);
    });
  }

  TEST_CASE("arc: a hit in B1 grows T1's target, and T2's LRU goes") {
    hand_trace(Policy::arc, 2, [](PolicyCache<Nothing>& c) {
      put(c, 1);
      put(c, 2);
      CHECK(get(c, 1));  // 1 -> T2
      put(c, 3);         // T1 = {2} is over p = 0: 2 -> B1
      CHECK_FALSE(c.contains(k(2)));
      CHECK_FALSE(get(c, 2));
      put(c, 2);  // in B1: p = 1; T1 = {3} is not over p: T2's LRU, 1, goes; 2 enters T2
      CHECK(c.contains(k(2)));
      CHECK(c.contains(k(3)));
      CHECK_FALSE(c.contains(k(1)));
    });
  }

  TEST_CASE("wtinylfu: the window's victim enters main only if counted more often") {
    hand_trace(Policy::wtinylfu, 100, [](PolicyCache<Nothing>& c) {
      for (std::uint64_t i = 1; i <= 100; ++i)
        put(c, i);  // window 1 entry, main 99: 1..20 in probation, 21..99 protected
      put(c, 101);  // 100 (counted twice by then) against 1 (once): a tie is no admission -- 100 goes
      CHECK_FALSE(c.contains(k(100)));
      CHECK(c.contains(k(1)));
      CHECK_FALSE(get(c, 100));
      put(c, 100);  // 101 against 1, 1 each: 101 goes
      CHECK_FALSE(c.contains(k(101)));
      put(c, 102);  // 100, now counted 3 times, beats 1: 1 goes, 100 enters main; the window is empty, so 2 goes
      CHECK(c.contains(k(100)));
      CHECK(c.contains(k(102)));
      CHECK_FALSE(c.contains(k(1)));
      CHECK_FALSE(c.contains(k(2)));
      CHECK(c.size() == 99);
    });
  }

  TEST_CASE("2q: A1in's oldest goes to A1out, whose keys enter Am, and a full Am gives up its LRU") {
    hand_trace(Policy::twoq, 4, [](PolicyCache<Nothing>& c) {  // A1in 1 entry, Am 3, A1out 2
      for (std::uint64_t i = 1; i <= 4; ++i)
        put(c, i);  // A1in = 1 2 3 4: new keys all enter A1in while there is room
      put(c, 5);    // A1in is over its share: 1 -> A1out
      CHECK_FALSE(c.contains(k(1)));
      CHECK(get(c, 2));  // a hit in A1in changes nothing
      put(c, 6);         // 2 -> A1out = 1 2
      CHECK_FALSE(c.contains(k(2)));
      put(c, 1);  // from A1out into Am; 3 -> A1out = 2 3
      put(c, 2);  // into Am; 4 -> A1out = 3 4; A1in = 5 6, Am = 1 2
      put(c, 3);  // into Am (now at its 3); 5 -> A1out = 4 5; A1in = 6
      CHECK(c.contains(k(1)));
      CHECK(c.contains(k(3)));
      CHECK_FALSE(c.contains(k(5)));
      CHECK(c.evictions() == 5);
      CHECK(c.erase(k(6)));  // room in the cache, none in Am
      put(c, 4);             // from A1out into a full Am: Am's LRU, 1, goes
      CHECK_FALSE(c.contains(k(1)));
      CHECK(c.size() == 3);
      CHECK(c.evictions() == 6);
      CHECK(get(c, 2));  // Am = 3 4 2
      put(c, 7);         // room for it: A1in = 7
      CHECK(c.size() == 4);
      put(c, 8);  // A1in is within its share (1 of 1): Am's LRU, 3, goes, leaving no ghost
      CHECK_FALSE(c.contains(k(3)));
      CHECK(c.contains(k(7)));
      put(c, 3);  // not in A1out: into A1in = 7 8, over its share: its oldest, 7, goes to A1out first
      CHECK(c.contains(k(3)));
      CHECK_FALSE(c.contains(k(7)));
      CHECK(c.contains(k(2)));
      CHECK(c.contains(k(4)));
      CHECK(c.contains(k(8)));
      CHECK(c.evictions() == 8);
    });
  }

  TEST_CASE("slru: a new key takes the lowest segment with room, and a hit climbs one, pushing that one's LRU down") {
    PolicyParams two;
    two.segments = 2;
    hand_trace(
        Policy::slru, 4,
        [](PolicyCache<Nothing>& c) {  // two segments of 2
          put(c, 1);
          put(c, 2);         // segment 0 = 1 2
          put(c, 3);         // segment 0 is full: 3 enters segment 1
          put(c, 4);         // segment 1 = 3 4
          CHECK(get(c, 1));  // 1 climbs; segment 1's LRU, 3, drops: segment 0 = 2 3, segment 1 = 4 1
          put(c, 5);         // the lowest segment's LRU, 2, goes; 5 enters segment 0 = 3 5
          CHECK_FALSE(c.contains(k(2)));
          CHECK(get(c, 4));  // top segment: refreshed there, 1 4
          put(c, 6);         // 3 goes: segment 0 = 5 6
          CHECK_FALSE(c.contains(k(3)));
          CHECK(get(c, 5));  // 5 climbs, 1 drops: segment 0 = 6 1, segment 1 = 4 5
          put(c, 7);         // 6 goes
          CHECK_FALSE(c.contains(k(6)));
          CHECK(c.contains(k(1)));
          CHECK(c.contains(k(4)));
          CHECK(c.evictions() == 3);
        },
        two);
  }

  TEST_CASE("policy parameters: spelt in the spec, checked, and spelt back") {
    const TierSpec s = parse_tier_spec("l1", "s3fifo(small=0.2,threshold=1):10000", "--tier l1=s3fifo(...)");
    CHECK(s.policy == Policy::s3fifo);
    CHECK(s.params.small == doctest::Approx(0.2));
    CHECK(s.params.threshold == 1);
    CHECK(s.max_entries == 10000);
    CHECK(policy_label(s.policy, s.params) == "s3fifo(small=0.2,threshold=1)");
    CHECK(policy_label(Policy::arc, {}) == "arc");
    CHECK(parse_tier_spec("l2", "clock(bits=3):64MB", "x").params.bits == 3);
    CHECK(parse_tier_spec("l1", "wtinylfu(window=0.05):5000:30s", "x").params.window == doctest::Approx(0.05));
    const TierSpec q = parse_tier_spec("l1", "2q(in=0.1,out=1):1000", "x");
    CHECK(q.policy == Policy::twoq);
    CHECK(q.params.in_share == doctest::Approx(0.1));
    CHECK(q.params.out_share == doctest::Approx(1.0));
    CHECK(policy_label(q.policy, q.params) == "2q(in=0.1,out=1)");
    CHECK(parse_tier_spec("l1", "slru(segments=8):64MB", "x").params.segments == 8);
    CHECK(policy_label(Policy::slru, {}) == "slru");
    auto error_of = [](std::string_view spec) -> std::string {
      try {
        parse_tier_spec("l1", spec, fmt::format("--tier l1={}", spec));
      } catch (const Error& e) {
        return e.what();
      }
      return "";
    };
    CHECK(error_of("s3fifo:10:abc") ==
          "--tier l1=s3fifo:10:abc: bad time to live 'abc': expected a number and a unit ms, s, m or h, e.g. 30s");
    CHECK(error_of("s3fifo(small=abc):10") ==
          "--tier l1=s3fifo(small=abc):10: s3fifo's small must be a number in [0, 1), got 'abc'");
    CHECK(error_of("s3fifo(small=1):10") ==
          "--tier l1=s3fifo(small=1):10: s3fifo's small must be a number in [0, 1), got '1'");
    CHECK(error_of("clock(bits=1.5):10") ==
          "--tier l1=clock(bits=1.5):10: clock's bits must be a whole number in [1, 8], got '1.5'");
    CHECK(error_of("arc(p=1):10") == "--tier l1=arc(p=1):10: policy arc has no parameter 'p' (it takes none)");
    CHECK(error_of("slru(segments=17):10") ==
          "--tier l1=slru(segments=17):10: slru's segments must be a whole number in [1, 16], got '17'");
    CHECK(error_of("2q(in=1):10") == "--tier l1=2q(in=1):10: 2q's in must be a number in [0, 1), got '1'");
    CHECK(error_of("sieve(x=1):10") == "--tier l1=sieve(x=1):10: policy sieve has no parameter 'x' (it takes none)");
    CHECK(error_of("s3fifo(sm=1):10") ==
          "--tier l1=s3fifo(sm=1):10: policy s3fifo has no parameter 'sm' (expected small, ghost, threshold)");
    CHECK(error_of("s3fifo(small=0.1:10") ==
          "--tier l1=s3fifo(small=0.1:10: expected s3fifo(KEY=VALUE,...), e.g. s3fifo(small=0.1,threshold=2), got "
          "'s3fifo(small=0.1'");
    CHECK(
        error_of("mru:10") ==
        "--tier l1=mru:10: unknown policy 'mru' (expected lru, lfu, fifo, ttl, clock, sieve, s3fifo, arc, wtinylfu, 2q "
        "or slru)");
    // Each parameter once: a second value is refused, never silently the one that wins.
    CHECK(error_of("wtinylfu(window=0.1,window=0.2):10") ==
          "--tier l1=wtinylfu(window=0.1,window=0.2):10: wtinylfu's window is given twice (give each parameter once)");
    CHECK(error_of("s3fifo(small=0.1,threshold=1,small=0.1):10").find("s3fifo's small is given twice") !=
          std::string::npos);
    CHECK(error_of("wtinylfu(window=0.1,protected=0.5):10").empty());
    // A TTL of zero is refused (no TTL is spelt by leaving it out), as a profile's ttl = 0 is.
    CHECK(error_of("lru:10:0s") ==
          "--tier l1=lru:10:0s: time to live must be above 0, got '0s' (leave ':TTL' out and entries never expire)");
    CHECK(error_of("lru:10:0.0ms").find("time to live must be above 0") != std::string::npos);
    CHECK(parse_tier_spec("l1", "lru:10", "x").ttl_s == 0);
    CHECK(is_zero_ttl("0s"));
    CHECK(is_zero_ttl("00.0h"));
    CHECK_FALSE(is_zero_ttl("0.5s"));
    CHECK_FALSE(is_zero_ttl("0x"));
    CHECK_FALSE(is_zero_ttl("."));
  }

  TEST_CASE("frequency sketch: never under-counts, halves") {
    policy::FrequencySketch s(100);
    for (int i = 0; i < 5; ++i)
      s.add(k(1));
    s.add(k(2));
    CHECK(s.estimate(k(1)) >= 5);
    CHECK(s.estimate(k(2)) >= 1);
    CHECK(s.estimate(k(3)) <= 1);
    s.halve();
    CHECK(s.estimate(k(1)) >= 2);
    CHECK(s.estimate(k(1)) <= 3);
  }

  TEST_CASE("frequency sketch: memory follows the keys it counts, the estimates those of the whole array") {
    // Sized for 10^8 keys, it counts 50: a few kilobytes, not 5.7 GB.
    policy::FrequencySketch big(100'000'000);
    for (int round = 0; round < 4; ++round)
      for (std::uint64_t key = 0; key < 50; ++key)
        big.add(k(key));
    CHECK(big.bytes() < 64 * 1024);
    CHECK(big.estimate(k(7)) >= 4);
    // Small sizes go from sparse to the array as keys arrive: equal to the array throughout, halving included.
    for (std::uint64_t size : {1, 10, 100, 1000}) {
      policy::FrequencySketch s(size);
      DenseSketch d(size);
      std::mt19937_64 rng(size);
      for (int op = 0; op < 20'000; ++op) {
        const CacheKey key = k(rng() % (4 * size + 8));
        if (op % 997 == 996) {
          s.halve();
          for (auto& x : d.c)
            x >>= 1;
        } else if (op % 3 == 0) {
          REQUIRE_MESSAGE(s.estimate(key) == d.estimate(key), fmt::format("size {} op {}", size, op));
        } else {
          s.add(key);
          d.add(key);
        }
      }
      CHECK(s.bytes() <= 2 * d.c.size() * sizeof(std::uint32_t) + 64 * 8);
      s.clear();
      CHECK(s.bytes() == 0);
      CHECK(s.estimate(k(1)) == 0);
    }
  }

  TEST_CASE("every policy honours a TTL and a byte limit together") {
    for (Policy p :
         {Policy::clock, Policy::sieve, Policy::s3fifo, Policy::arc, Policy::wtinylfu, Policy::twoq, Policy::slru}) {
      CAPTURE(policy_name(p));
      PolicyCache<Nothing> c(p, 0, 100, 1.0);
      for (std::uint64_t i = 0; i < 50; ++i)
        c.put(k(i), Nothing{}, 10, static_cast<Nanos>(i) * 1'000'000);
      CHECK(c.bytes() <= 100);
      CHECK(c.evictions() > 0);
      c.put(k(1000), Nothing{}, 10, 5'000'000'000);  // every other entry has expired by now
      CHECK(c.size() == 1);
      CHECK(c.expirations() > 0);
      c.put(k(1001), Nothing{}, 101, 5'000'000'000);  // bigger than the limit: not stored
      CHECK(c.counters().rejected == 1);
      CHECK_FALSE(c.contains(k(1001)));
    }
  }
}
