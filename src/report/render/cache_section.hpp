#pragma once
#include <string>

#include "base/json.hpp"
#include "inferprof/report.hpp"

namespace inferprof::report {

std::string tier_spec_text(const TierSpec& spec);  // "lru:10,000", "ttl:1,000:30s"
// The cache block under the stage table ("" without caches).
std::string cache_table_lines(const RunSummary& s, bool markdown);
// --verify's line ("" when off): what was recomputed, the mismatches.
std::string verify_lines(const RunSummary& s, bool markdown);
void write_cache_json(JsonWriter& w, const RunSummary& s);

}  // namespace inferprof::report
