#pragma once
// Internal to the modules that read and write a version's metadata (store,
// redis): meta.json and index.json, and the store's "no such model" errors.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/error.hpp"
#include "inferprof/model_ref.hpp"

namespace inferprof::store_detail {

// The most a meta.json or index.json may hold, read from a folder or over
// HTTP: a version's metadata is a few hundred bytes, so this lists thousands;
// more is not one of ours (and a body that never ends stops here).
constexpr std::uint64_t kMaxMetaBytes = 1 << 20;

// meta.json: {"name", "version", "size", "sha256", "created"}, pretty-printed.
std::string meta_json(const ModelMeta& m);
// index.json at a store's root: {"models": [meta, ...]}, what `store put`
// keeps current so that an http(s) store can list.
std::string index_json(const std::vector<ModelMeta>& metas);
// Throws Error(runtime) "WHERE: ..." when the text is not a valid meta / index.
ModelMeta parse_meta_json(std::string_view text, const std::string& where);
std::vector<ModelMeta> parse_index_json(std::string_view text, const std::string& where);
// By name, then created, then version.
void sort_metas(std::vector<ModelMeta>& metas);
// ISO 8601 UTC with milliseconds, "2026-11-30T01:02:03.123Z": sorts as text,
// and two versions put within one second still have an order.
std::string utc_now_iso();
// The newest version of `name` by `created`; throws Error(bad_input)
// "URL: no model NAME" when the store holds none.
std::string newest_version(RemoteStore& remote, const std::string& name);
// Error(bad_input) "URL: no model NAME@VERSION (NAME has versions a, b)".
Error no_model(RemoteStore& remote, const ModelRef& ref);

}  // namespace inferprof::store_detail
