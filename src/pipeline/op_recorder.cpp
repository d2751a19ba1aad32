#include <ATen/record_function.h>

#include <mutex>
#include <unordered_map>

#include "pipeline/torch_detail.hpp"

namespace inferprof::detail {
namespace {

struct ThreadState {
  RequestRecord* record = nullptr;
  std::int32_t parent = -1;
  std::vector<std::int32_t> open;                        // spans of ops not yet ended, innermost last
  std::unordered_map<std::string, std::uint32_t> names;  // op name -> interned id, per thread: no lock
};
thread_local ThreadState tls;

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  if (!tls.record) return nullptr;
  std::string name(fn.name());
  auto it = tls.names.find(name);
  if (it == tls.names.end()) it = tls.names.emplace(name, NameTable::global().intern(name)).first;
  std::int32_t parent = tls.open.empty() ? tls.parent : tls.open.back();
  tls.open.push_back(tls.record->open(it->second, parent));
  return nullptr;
}

void on_op_end(const at::RecordFunction&, at::ObserverContext*) {
  if (!tls.record || tls.open.empty()) return;
  tls.record->close(tls.open.back());
  tls.open.pop_back();
}

}  // namespace

void OpRecorder::install() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Only aten operator scopes: the spans users recognise from torch.profiler.
    at::addGlobalCallback(
        at::RecordFunctionCallback(&on_op_start, &on_op_end).needsInputs(false).scopes({at::RecordScope::FUNCTION}));
  });
}

OpRecorder::Scope::Scope(bool enabled, RequestRecord& record, std::int32_t parent) : enabled_(enabled) {
  if (!enabled_) return;
  tls.record = &record;
  tls.parent = parent;
  tls.open.clear();
}

OpRecorder::Scope::~Scope() {
  if (!enabled_) return;
  // An op that threw never ended: close what is still open so the span tree stays well-formed.
  while (!tls.open.empty()) {
    tls.record->close(tls.open.back());
    tls.open.pop_back();
  }
  tls.record = nullptr;
}

}  // namespace inferprof::detail
