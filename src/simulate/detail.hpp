#pragma once
// Pieces the simulate module's files share.
#include <string>
#include <string_view>
#include <vector>

namespace inferprof::detail {

// RFC 4180 fields of one line (quotes doubled inside quoted fields); false
// when a quote is left open. For cache-trace CSVs and a run's requests.csv.
bool split_csv(std::string_view line, std::vector<std::string>& fields);

}  // namespace inferprof::detail
