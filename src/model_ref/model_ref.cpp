// Model references (name@version), sha256, and the metadata's JSON form.
#include "inferprof/model_ref.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <tuple>

#include "base/json.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"
#include "model_ref/model_ref.hpp"

namespace inferprof {
namespace {

// Names and versions become folder names and URL path segments: nothing that
// could climb out of the store's root or need escaping.
// At most 128 characters: a folder name longer than the file system's 255
// fails at every path operation.
bool valid_part(std::string_view s) {
  if (s.empty() || s.size() > 128 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
           c == '-';
  });
}

constexpr const char* kRefForm =
    "expected NAME@VERSION or NAME, each of letters, digits, '.', '_' and '-', at most 128 characters (e.g. resnet@v2)";

}  // namespace

std::string ModelRef::str() const {
  return version.empty() ? name : name + "@" + version;
}

ModelRef parse_model_ref(std::string_view text, std::string_view what) {
  std::size_t at = text.find('@');
  ModelRef ref;
  ref.name = std::string(text.substr(0, at));
  if (at != std::string_view::npos) {
    ref.version = std::string(text.substr(at + 1));
    if (ref.version.empty())
      throw bad_input(fmt::format("{}: {}, got '{}' (nothing after '@')", what, kRefForm, printable(text)));
  }
  if (!valid_part(ref.name) || (at != std::string_view::npos && !valid_part(ref.version)))
    throw bad_input(fmt::format("{}: {}, got '{}'", what, kRefForm, printable(text)));
  return ref;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr) != 1 || len != 32)
    throw runtime_failure("sha256: OpenSSL's EVP_Digest failed");
  static const char* hex = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned i = 0; i < 32; ++i) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  return out;
}

std::string_view store_tier_name(StoreTier t) {
  switch (t) {
    case StoreTier::memory:
      return "memory";
    case StoreTier::redis:
      return "redis";
    case StoreTier::remote:
      return "remote";
  }
  return "?";
}

namespace store_detail {
namespace {

void write_meta(report::JsonWriter& w, const ModelMeta& m) {
  w.begin_object()
      .field("name", m.name)
      .field("version", m.version)
      .field("size", m.size)
      .field("sha256", m.sha256)
      .field("created", m.created)
      .end_object();
}

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

ModelMeta meta_from(simdjson::dom::element e, const std::string& where) {
  ModelMeta m;
  auto str = [&](const char* k, std::string* out) {
    std::string_view v;
    if (e[k].get(v) != simdjson::SUCCESS)
      throw runtime_failure(fmt::format("{}: expected a string \"{}\" in the model metadata", where, k));
    *out = std::string(v);
  };
  str("name", &m.name);
  str("version", &m.version);
  str("sha256", &m.sha256);
  str("created", &m.created);
  if (e["size"].get(m.size) != simdjson::SUCCESS)
    throw runtime_failure(fmt::format("{}: expected a non-negative integer \"size\" in the model metadata", where));
  if (!valid_part(m.name) || !valid_part(m.version))
    throw runtime_failure(fmt::format("{}: bad name or version '{}@{}' in the model metadata", where, printable(m.name),
                                      printable(m.version)));
  if (!is_sha256_hex(m.sha256))
    throw runtime_failure(
        fmt::format("{}: \"sha256\" must be 64 lowercase hex digits, got '{}'", where, printable(m.sha256)));
  return m;
}

}  // namespace

std::string meta_json(const ModelMeta& m) {
  report::JsonWriter w;
  write_meta(w, m);
  return w.str();  // ends with a newline
}

std::string index_json(const std::vector<ModelMeta>& metas) {
  report::JsonWriter w;
  w.begin_object().key("models").begin_array();
  for (const ModelMeta& m : metas)
    write_meta(w, m);
  w.end_array().end_object();
  return w.str();  // ends with a newline
}

ModelMeta parse_meta_json(std::string_view text, const std::string& where) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(simdjson::padded_string(text)).get(root); err)
    throw runtime_failure(fmt::format("{}: not valid JSON ({})", where, simdjson::error_message(err)));
  return meta_from(root, where);
}

std::vector<ModelMeta> parse_index_json(std::string_view text, const std::string& where) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(simdjson::padded_string(text)).get(root); err)
    throw runtime_failure(fmt::format("{}: not valid JSON ({})", where, simdjson::error_message(err)));
  simdjson::dom::array models;
  if (root["models"].get(models) != simdjson::SUCCESS)
    throw runtime_failure(fmt::format("{}: expected {{\"models\": [...]}}", where));
  std::vector<ModelMeta> out;
  for (simdjson::dom::element e : models)
    out.push_back(meta_from(e, where));
  sort_metas(out);
  return out;
}

void sort_metas(std::vector<ModelMeta>& metas) {
  std::sort(metas.begin(), metas.end(), [](const ModelMeta& a, const ModelMeta& b) {
    return std::tie(a.name, a.created, a.version) < std::tie(b.name, b.created, b.version);
  });
}

std::string utc_now_iso() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
}

std::string newest_version(RemoteStore& remote, const std::string& name) {
  const ModelMeta* newest = nullptr;
  std::vector<ModelMeta> all = remote.list();  // sorted: the last of a name is the newest
  for (const ModelMeta& m : all)
    if (m.name == name) newest = &m;
  if (!newest) throw no_model(remote, ModelRef{name, ""});
  return newest->version;
}

Error no_model(RemoteStore& remote, const ModelRef& ref) {
  std::vector<std::string> versions;
  try {
    for (const ModelMeta& m : remote.list())
      if (m.name == ref.name) versions.push_back(m.version);
  } catch (const std::exception&) {
    // The listing is a hint only; the error stands without it.
  }
  std::string hint = versions.empty() ? fmt::format("no versions of '{}'", ref.name)
                                      : fmt::format("'{}' has {}", ref.name, fmt::join(versions, ", "));
  return bad_input(fmt::format("{}: no model {} ({})", remote.url(), ref.str(), hint));
}

}  // namespace store_detail
}  // namespace inferprof
