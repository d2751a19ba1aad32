#pragma once
#include <string>

#include "inferprof/report.hpp"
#include "report/json.hpp"

namespace inferprof::report {

// The model-update block under the stage table ("" without updates).
std::string update_table_lines(const RunSummary& s, bool markdown);
void write_updates_json(JsonWriter& w, const RunSummary& s);

}  // namespace inferprof::report
