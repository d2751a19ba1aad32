#pragma once
// --dump-inputs DIR and --dump-outputs DIR: what the model was given and gave
// back, one folder per distinct key of the trace, as .npy files a user's own
// Python can load and compare with their service's tensors.
#include "inferprof/pipeline.hpp"
#include "inferprof/run_config.hpp"

namespace inferprof::detail {

// Checks that the dump folders can be written (before any work is done).
void check_dump_dirs(const OutputOptions& output);

// `config` with no dump folders: what a compare's later passes replay with.
RunConfig without_dumps(RunConfig config);

// After the measured replay, one more pass over the trace (up to --limit
// requests) computing each distinct key's first request without caches:
// DIR/NNNNNN/input.ARG.npy (named by the forward's arguments) and
// DIR/NNNNNN/output[.NAME].npy, with DIR/keys.csv mapping the folders to keys,
// request ids, trace lines and input files. Written under a staging folder and
// moved into place at the end: an error or a signal leaves DIR as it was.
// Interrupted (before or during), it dumps nothing and returns, so that the
// caller still writes the reports of what was measured. Throws Error.
void dump_model_io(const RunConfig& config, Pipeline& pipeline);

}  // namespace inferprof::detail
