#pragma once
// `inferprof inspect`: what a TorchScript model takes and whether the input a
// profile (or --shape/--dtype) gives it works, found by a trial forward. The
// work is done in the pipeline plugin (libtorch); gen-trace --like uses it too.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "inferprof/pipeline.hpp"

namespace inferprof {

struct InspectOptions {
  std::vector<std::int64_t> shape;  // --shape; empty: the profile's [input], else the model's metadata
  std::optional<DType> dtype;       // --dtype; unset: likewise
  std::int64_t seq_len = 0;         // --seq-len: token inputs' length; 0: the model's metadata, else 128
};

struct ForwardArgument {
  std::string name;  // as in the TorchScript schema ("x", "input_ids")
  std::string type;  // "Tensor", "Optional[Tensor]", "int", ...
};

struct Inspection {
  ModelInfo model;  // path, hash, size, metadata (inferprof.json), parameter count, load time
  std::int64_t parameter_bytes = 0;
  std::vector<ForwardArgument> arguments;  // forward's, without self
  std::string returns;                     // forward's return type
  // The input a run gives the model: shape and dtype, and where they came
  // from: "--shape", "profile", "metadata", "first layer" (a guess), or "none".
  std::vector<std::int64_t> shape;
  DType dtype = DType::float32;
  std::string source = "none";
  bool image = false;  // the profile decodes images: the trial sends a synthesised JPEG
  bool text = false;   // the profile tokenizes: the trial sends a sentence, as a text request
  // A model taking token ids (source "embedding"): one named seeded input per
  // forward argument (ids in [0, vocab), a mask of ones, type ids of zeros),
  // which the trial sends and gen-trace --like writes as a request's "inputs".
  std::vector<InputSpec> inputs;
  // What the model's first layer takes, read from its weight ("[N, 3, H, W]
  // float32 (first layer 'conv1_w' [64, 3, 7, 7])"); empty when unknown.
  std::string expects;
  // The trial forward with that input.
  bool trial_ran = false, trial_ok = false;
  double trial_ms = 0;
  std::vector<std::int64_t> output_shape;  // a tensor output's
  std::string output_dtype;
  std::string error;  // when it failed: the line `run` would print, with what to do
};

// Loads the model, reads its schema and metadata, and runs one trial forward
// through `profile`'s preprocessing. Throws Error(runtime) when the model
// cannot be loaded; a failed trial is reported in the result, not thrown.
Inspection inspect_model(const ModelBytes& model, const Profile& profile, const InspectOptions& options);

}  // namespace inferprof
