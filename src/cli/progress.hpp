#pragma once
// The live progress line on stderr: what the replay is doing (loading the
// model, warm-up k/n, replaying, writing reports), requests done of the total
// (exact once known, else "~" an estimate from the trace's size), req/s and
// the ETA; compare prefixes the configuration k/n and repeat r/R. Only when
// stderr is a terminal: a log or a pipe gets none of it.
#include <memory>

#include "inferprof/replay.hpp"

namespace inferprof::cli {

// Null when stderr is not a terminal.
std::shared_ptr<ReplayObserver> make_progress_display();

}  // namespace inferprof::cli
