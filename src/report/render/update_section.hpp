#pragma once
#include <string>

#include "base/json.hpp"
#include "inferprof/report.hpp"

namespace inferprof::report {

// The model-update block under the stage table ("" without updates).
std::string update_table_lines(const RunSummary& s, bool markdown);
void write_updates_json(JsonWriter& w, const RunSummary& s);

}  // namespace inferprof::report
