#pragma once
// --dump-inputs DIR and --dump-outputs DIR: what the model was given and gave
// back, one folder per distinct key of the trace, as .npy files a user's own
// Python can load and compare with their service's tensors.
#include "inferprof/pipeline.hpp"
#include "inferprof/run_config.hpp"

namespace inferprof::detail {

// Refuses (bad input, before any work) outputs that are one folder or nested:
// --out (`out_dir`), --dump-inputs and --dump-outputs (these two may be one).
void check_outputs(const OutputOptions& output, const std::string& out_dir);

// Checks that the dump folders can be written and hold nothing an earlier
// dump's keys.csv does not name (before any work is done).
void check_dump_dirs(const OutputOptions& output);

// `config` with no dump folders: what a compare's later passes replay with.
RunConfig without_dumps(RunConfig config);

// After the measured replay, one more pass over the trace (up to --limit
// requests) computing each distinct key's first request without caches:
// DIR/NNNNNN/input.ARG.npy (named by the forward's arguments) and
// DIR/NNNNNN/output[.NAME].npy, with DIR/keys.csv mapping the folders to keys,
// request ids, trace lines and input files. Written under a staging folder and
// moved into place at the end: an error or a signal leaves DIR as it was. An
// earlier dump there is replaced: only the folders and files its keys.csv
// names are removed; a folder holding anything else is refused up front.
// Interrupted (before or during), it dumps nothing and returns, so that the
// caller still writes the reports of what was measured. Throws Error.
void dump_model_io(const RunConfig& config, Pipeline& pipeline);

}  // namespace inferprof::detail
