// Model updates between replicas over Redis pub/sub. Publishing uses one
// connection (under a mutex); a background thread holds a second one in
// subscribed mode and calls the handler per message. The thread blocks in a
// read with no timeout; the destructor wakes it by shutting the socket down.
// If the server goes away the thread reconnects and subscribes again until
// the channel is destroyed (messages published meanwhile are lost: pub/sub
// keeps nothing).
#include "inferprof/update_channel.hpp"

#include <fmt/format.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "inferprof/error.hpp"
#include "redis/redis_connect.hpp"

namespace inferprof {

using redis_detail::Context;
using redis_detail::kCommandTimeout;
using redis_detail::kConnectTimeout;
using redis_detail::Reply;

namespace {
constexpr auto kRetryPause = std::chrono::milliseconds(100);
constexpr auto kSubscribeWait = std::chrono::seconds(10);
}  // namespace

struct UpdateChannel::Impl {
  redis_detail::RedisUrl url;
  std::string channel;
  Handler handler;

  std::mutex pub_mu;
  Context pub;

  std::mutex sub_mu;
  std::condition_variable sub_cv;
  bool subscribed = false;
  bool stopping = false;
  int sub_fd = -1;
  std::thread thread;

  void subscriber() {
    while (true) {
      std::string why;
      Context c = redis_detail::connect_redis(url, kConnectTimeout, nullptr, false, &why);
      {
        std::unique_lock<std::mutex> lock(sub_mu);
        if (stopping) return;
        if (!c) {
          sub_cv.wait_for(lock, kRetryPause, [&] { return stopping; });
          continue;
        }
        sub_fd = c->fd;
      }
      listen(c.get());
      std::unique_lock<std::mutex> lock(sub_mu);
      sub_fd = -1;
      subscribed = false;
      if (stopping) return;
      sub_cv.wait_for(lock, kRetryPause, [&] { return stopping; });
    }
  }

  // Until the connection breaks (or is shut down).
  void listen(redisContext* c) {
    redis_detail::SigpipeGuard guard;
    Reply r = redis_detail::command(c, {"SUBSCRIBE", channel});
    if (!r || r->type != REDIS_REPLY_ARRAY) return;
    {
      std::lock_guard<std::mutex> lock(sub_mu);
      subscribed = true;
    }
    sub_cv.notify_all();
    for (;;) {
      void* raw = nullptr;
      if (redisGetReply(c, &raw) != REDIS_OK || raw == nullptr) return;
      Reply msg(static_cast<redisReply*>(raw));
      if (msg->type != REDIS_REPLY_ARRAY || msg->elements != 3 || msg->element[2]->type != REDIS_REPLY_STRING ||
          std::string_view(msg->element[0]->str, msg->element[0]->len) != "message")
        continue;
      std::string_view payload(msg->element[2]->str, msg->element[2]->len);
      try {
        handler(parse_model_ref(payload, fmt::format("update on Redis channel {}", channel)));
      } catch (const std::exception&) {
        // A malformed message from another publisher, or a handler that
        // failed: neither may end the subscription for the messages after it.
      }
    }
  }
};

UpdateChannel::UpdateChannel(const std::string& redis_url, std::string channel, Handler on_update)
    : impl_(std::make_unique<Impl>()) {
  impl_->url = redis_detail::resolve_redis_url(redis_url);
  impl_->channel = std::move(channel);
  impl_->handler = std::move(on_update);
  std::string why;
  impl_->pub = redis_detail::connect_redis(impl_->url, kConnectTimeout, &kCommandTimeout, true, &why);
  if (!impl_->pub) throw runtime_failure(why);
  impl_->thread = std::thread([impl = impl_.get()] { impl->subscriber(); });
}

UpdateChannel::~UpdateChannel() {
  {
    std::lock_guard<std::mutex> lock(impl_->sub_mu);
    impl_->stopping = true;
    if (impl_->sub_fd >= 0) ::shutdown(impl_->sub_fd, SHUT_RDWR);
  }
  impl_->sub_cv.notify_all();
  impl_->thread.join();
}

void UpdateChannel::publish(const ModelRef& ref) {
  std::lock_guard<std::mutex> lock(impl_->pub_mu);
  redis_detail::SigpipeGuard guard;
  const std::string payload = ref.str();
  std::string why;
  // A pooled-style retry: after a server restart the old socket is dead.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!impl_->pub) {
      impl_->pub = redis_detail::connect_redis(impl_->url, kConnectTimeout, &kCommandTimeout, false, &why);
      if (!impl_->pub) continue;
    }
    Reply r = redis_detail::command(impl_->pub.get(), {"PUBLISH", impl_->channel, payload});
    if (r && r->type != REDIS_REPLY_ERROR) return;
    why = r ? redis_detail::scrub(impl_->url, std::string(r->str, r->len))
            : "Redis at " + impl_->url.shown + ": " + redis_detail::scrub(impl_->url, impl_->pub->errstr);
    if (r) break;  // the server said no: retrying will not change that
    impl_->pub.reset();
  }
  throw runtime_failure(fmt::format("cannot publish {} on Redis channel {}: {}", payload, impl_->channel, why));
}

void UpdateChannel::wait_subscribed() {
  std::unique_lock<std::mutex> lock(impl_->sub_mu);
  if (!impl_->sub_cv.wait_for(lock, kSubscribeWait, [&] { return impl_->subscribed; }))
    throw runtime_failure(fmt::format("Redis at {}: not subscribed to channel {} after {} s", impl_->url.shown,
                                      impl_->channel, kSubscribeWait.count()));
}

}  // namespace inferprof
