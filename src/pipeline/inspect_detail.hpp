#pragma once
// Private to the pipeline module: what a model's first layer says about the
// input it takes, shared by `inspect` and run's error for a rejected input.
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/torch_detail.hpp"

namespace inferprof {
struct LoadedModel;
}

namespace inferprof::detail {

const torch::jit::Module& module_of(const LoadedModel& model);  // pipeline.cpp

struct InputGuess {
  bool known = false;
  std::vector<std::int64_t> pattern;  // -1: any extent (N, H, W, L)
  DType dtype = DType::float32;
  std::string layer;                 // the first parameter's name
  std::vector<std::int64_t> weight;  // and shape
  // "[N, 3, H, W] float32 (its first layer 'conv1_w' is [64, 3, 7, 7])"
  std::string describe() const;
  // Whether `shape`/`dtype` fit the pattern (rank, fixed extents, integer or floating).
  bool fits(const std::vector<std::int64_t>& shape, DType dtype) const;
  // A concrete shape: `hint` when it fits, else N = 1, H = W = 224, L = 128.
  std::vector<std::int64_t> example(const std::vector<std::int64_t>& hint) const;
};
// From the first parameter in registration order: a 4-D weight is a conv2d
// ([N, C_in, H, W]), 3-D a conv1d, 2-D a linear layer ([N, in]) or, when its
// name says embedding, token ids ([N, L] int64).
InputGuess guess_input(const torch::jit::Module& module);

// Inputs for a model whose forward takes token ids (an argument that indexes an
// aten::embedding, found in the inlined forward graph, so that it holds
// whatever the layer is called) and, by name, an attention mask
// ("...mask...": all ones) or token type ids ("...type..."/"segment": zeros):
// one seeded [1, seq_len] int64 spec per Tensor argument, named, ids drawn
// from [0, vocab). Empty when no argument feeds an embedding, or when an
// argument without a default is none of these (nothing to synthesise it from).
std::vector<InputSpec> token_inputs(const torch::jit::Module& module, std::int64_t seq_len);

// What to do about an input the model rejects: "the model expects ...: use
// --profile image-classification or --shape 1,3,224,224"; empty when the
// guess is unknown or the input fits it (then the cause is something else).
std::string input_advice(const torch::jit::Module& module, const std::vector<std::int64_t>& given_shape,
                         DType given_dtype, const std::vector<std::int64_t>& metadata_shape,
                         const std::string& current_profile = {});

}  // namespace inferprof::detail
