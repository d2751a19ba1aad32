#pragma once
// Model updates between replicas over Redis pub/sub (module redis,
// src/redis/update_channel.cpp).
#include <functional>
#include <memory>
#include <string>

#include "inferprof/model_ref.hpp"

namespace inferprof {

// Redis pub/sub for model updates between replicas: publish on one connection,
// a background thread subscribed on another calls `on_update` per message.
class UpdateChannel {
 public:
  using Handler = std::function<void(const ModelRef&)>;
  // Throws Error(runtime) when Redis cannot be reached.
  UpdateChannel(const std::string& redis_url, std::string channel, Handler on_update);
  ~UpdateChannel();  // unsubscribes and joins
  UpdateChannel(const UpdateChannel&) = delete;
  UpdateChannel& operator=(const UpdateChannel&) = delete;
  void publish(const ModelRef& ref);
  // Blocks until the subscription is live (so no message published after it is missed).
  void wait_subscribed();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace inferprof
