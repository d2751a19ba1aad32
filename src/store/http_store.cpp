// The http(s) store: a file store's folder served by any static web server.
// GET BASE/name/version/meta.json and model.pt; BASE/index.json lists. libcurl
// only here, loaded when the first http store is opened: libcurl and the ~30
// libraries it needs would otherwise cost every command ~7 ms and ~8 MB at
// start-up. Read-only: models are published into a file store.
#include <curl/curl.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <mutex>
#include <new>

#include "inferprof/error.hpp"
#include "store/store_detail.hpp"

namespace inferprof::store_detail {
namespace {

constexpr long kConnectTimeoutMs = 5000;
// A transfer slower than 1 KB/s for 30 s is given up: a large model on a slow
// link may take long, a stalled one must not hang a run.
constexpr long kLowSpeedBytes = 1024, kLowSpeedSeconds = 30;

// An error page's body is not kept (its status is the error); one longer than this stops the transfer.
constexpr std::uint64_t kMaxErrorBody = 64 * 1024;

// The libcurl functions used here, from the library's stable ABI (soname 4).
struct Curl {
  decltype(&::curl_global_init) global_init;
  decltype(&::curl_easy_init) easy_init;
  decltype(&::curl_easy_setopt) easy_setopt;
  decltype(&::curl_easy_perform) easy_perform;
  decltype(&::curl_easy_getinfo) easy_getinfo;
  decltype(&::curl_easy_strerror) easy_strerror;
  decltype(&::curl_easy_cleanup) easy_cleanup;
};

struct Response {
  const Curl* lib = nullptr;
  CURL* handle = nullptr;
  long status = 0;
  std::string body;
  std::uint64_t max_bytes = 0;  // more stops the transfer (a body that never ends, a file larger than stated)
  bool over = false;            // it did
  curl_off_t announced = -1;    // the Content-Length that was over it (the body was not read), else -1
  std::uint64_t received = 0;   // bytes of body the server sent, the chunk that went over included
  bool headers_seen = false;    // the status and Content-Length were looked at (the first chunk)
  bool error_page_cut = false;  // a non-200 body stopped at kMaxErrorBody
  bool out_of_memory = false;
};

// Returning less than it was given makes libcurl stop with CURLE_WRITE_ERROR;
// nothing may be thrown through libcurl's C frames.
std::size_t on_data(char* data, std::size_t size, std::size_t n, void* user) {
  auto* resp = static_cast<Response*>(user);
  const std::size_t len = size * n;
  if (!resp->headers_seen) {  // the headers are in: a Content-Length over the limit stops before the body
    resp->headers_seen = true;
    resp->lib->easy_getinfo(resp->handle, CURLINFO_RESPONSE_CODE, &resp->status);
    curl_off_t length = -1;
    resp->lib->easy_getinfo(resp->handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length);
    if (resp->status == 200 && length >= 0 && static_cast<std::uint64_t>(length) > resp->max_bytes) {
      resp->over = true;
      resp->announced = length;
      return 0;
    }
  }
  resp->received += len;
  if (resp->status != 200) {
    if (resp->received > kMaxErrorBody) {
      resp->error_page_cut = true;
      return 0;
    }
    return len;
  }
  if (resp->body.size() + len > resp->max_bytes) {
    resp->over = true;
    return 0;
  }
  try {
    resp->body.append(data, len);
  } catch (const std::bad_alloc&) {
    resp->out_of_memory = true;
    return 0;
  }
  return len;
}

constexpr const char* kCurlLibrary = "libcurl.so.4";

template <typename F>
void resolve(void* handle, F& f, const char* name) {
  f = reinterpret_cast<F>(::dlsym(handle, name));
  if (f == nullptr) throw runtime_failure(fmt::format("{}: no {} in it ({})", kCurlLibrary, name, ::dlerror()));
}

// Loaded once, and curl_global_init'ed, on first use. Throws Error(runtime).
const Curl& curl() {
  static const Curl lib = [] {
    void* h = ::dlopen(kCurlLibrary, RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) throw runtime_failure(fmt::format("an http(s) model store needs libcurl: {}", ::dlerror()));
    Curl c{};
    resolve(h, c.global_init, "curl_global_init");
    resolve(h, c.easy_init, "curl_easy_init");
    resolve(h, c.easy_setopt, "curl_easy_setopt");
    resolve(h, c.easy_perform, "curl_easy_perform");
    resolve(h, c.easy_getinfo, "curl_easy_getinfo");
    resolve(h, c.easy_strerror, "curl_easy_strerror");
    resolve(h, c.easy_cleanup, "curl_easy_cleanup");
    c.global_init(CURL_GLOBAL_DEFAULT);
    return c;
  }();
  return lib;
}

struct CurlFree {
  void operator()(CURL* c) const noexcept { curl().easy_cleanup(c); }
};

class HttpStore final : public RemoteStore {
 public:
  explicit HttpStore(std::string url) : url_(std::move(url)), base_(url_) {
    while (!base_.empty() && base_.back() == '/')
      base_.pop_back();
    curl();  // a missing libcurl fails here, before any request
  }

  std::string url() const override { return url_; }

  ModelMeta meta(const ModelRef& ref) override {
    ModelRef r = resolved(ref);
    std::string u = object_url(r, "meta.json");
    Response resp = get(u, kMaxMetaBytes);
    if (resp.status == 404) throw no_model(*this, r);
    expect_ok(u, resp);
    return parse_meta_json(resp.body, u);
  }

  std::string fetch(const ModelRef& ref, std::uint64_t size) override {
    ModelRef r = resolved(ref);
    std::string u = object_url(r, "model.pt");
    Response resp = get(u, size, "the size its meta.json states", true);
    if (resp.status == 404)
      throw runtime_failure(fmt::format("{}: {}: GET {}: HTTP 404 (the model file is missing)", url_, r.str(), u));
    expect_ok(u, resp);
    return std::move(resp.body);
  }

  std::vector<ModelMeta> list() override {
    std::string u = base_ + "/index.json";
    Response resp = get(u, kMaxMetaBytes);
    if (resp.status == 404)
      throw runtime_failure(fmt::format(
          "{}: GET {}: HTTP 404: an http store is a file store's folder served over HTTP, and `inferprof store put` "
          "writes its index.json",
          url_, u));
    expect_ok(u, resp);
    return parse_index_json(resp.body, u);
  }

  void put(const ModelRef&, std::string_view) override { read_only(); }
  bool remove(const ModelRef&) override { read_only(); }

 private:
  [[noreturn]] void read_only() const {
    throw bad_input(fmt::format(
        "{}: an http(s) store is read-only: put and rm work on a file:// store (whose folder the server serves)",
        url_));
  }
  ModelRef resolved(const ModelRef& ref) {
    if (!ref.version.empty()) return ref;
    return ModelRef{ref.name, newest_version(*this, ref.name)};
  }
  std::string object_url(const ModelRef& r, const char* file) const {
    return base_ + "/" + r.name + "/" + r.version + "/" + file;
  }
  void expect_ok(const std::string& u, const Response& resp) const {
    if (resp.status != 200) throw runtime_failure(fmt::format("{}: GET {}: HTTP {}", url_, u, resp.status));
  }

  // One handle per request: requests may come from several threads, and on a
  // model-sized transfer the connection set-up is noise.
  // At most `max_bytes` of body: more is an error naming the URL.
  // `cap` names the limit in the error; `cap_is_size` (a model: meta.json states its size) adds the bytes received.
  Response get(const std::string& u, std::uint64_t max_bytes, const char* cap = "more than the file can be",
               bool cap_is_size = false) const {
    const Curl& lib = curl();
    std::unique_ptr<CURL, CurlFree> c(lib.easy_init());
    if (!c) throw runtime_failure(fmt::format("{}: cannot start libcurl", url_));
    Response resp;
    resp.lib = &lib;
    resp.handle = c.get();
    resp.max_bytes = max_bytes;
    char errbuf[CURL_ERROR_SIZE] = "";
    lib.easy_setopt(c.get(), CURLOPT_URL, u.c_str());
    lib.easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);  // no SIGALRM for timeouts: threads
    lib.easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);
    lib.easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT_MS, kConnectTimeoutMs);
    lib.easy_setopt(c.get(), CURLOPT_LOW_SPEED_LIMIT, kLowSpeedBytes);
    lib.easy_setopt(c.get(), CURLOPT_LOW_SPEED_TIME, kLowSpeedSeconds);
    lib.easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, on_data);
    lib.easy_setopt(c.get(), CURLOPT_WRITEDATA, &resp);
    lib.easy_setopt(c.get(), CURLOPT_ERRORBUFFER, errbuf);
    CURLcode rc = lib.easy_perform(c.get());
    if (resp.over && resp.announced >= 0)
      throw runtime_failure(fmt::format(
          "{}: GET {}: the body is over {} bytes, {}: the server announces {} bytes (stopped before reading it)", url_,
          u, max_bytes, cap, resp.announced));
    if (resp.over && cap_is_size)
      throw runtime_failure(fmt::format("{}: GET {}: the body is over {} bytes, {}: {} received when it was stopped",
                                        url_, u, max_bytes, cap, resp.received));
    if (resp.over)
      throw runtime_failure(fmt::format("{}: GET {}: the body is over {} bytes, {}", url_, u, max_bytes, cap));
    if (resp.out_of_memory)
      throw runtime_failure(fmt::format("{}: GET {}: not enough memory for the body after {} bytes (see ulimit -v)",
                                        url_, u, resp.body.size()));
    if (rc != CURLE_OK && !resp.error_page_cut)
      throw runtime_failure(
          fmt::format("{}: GET {}: {}", url_, u, errbuf[0] ? std::string(errbuf) : lib.easy_strerror(rc)));
    lib.easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &resp.status);
    return resp;
  }

  std::string url_, base_;
};

}  // namespace

std::unique_ptr<RemoteStore> make_http_store(const std::string& url) {
  return std::make_unique<HttpStore>(url);
}

}  // namespace inferprof::store_detail
