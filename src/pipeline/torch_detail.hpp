#pragma once
// Private to the pipeline module: the only place that includes libtorch.
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/script.h>

#include <atomic>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "inferprof/profile.hpp"
#include "inferprof/timing.hpp"
#include "inferprof/trace.hpp"
#include "text/tokenizer.hpp"

namespace inferprof::detail {

at::ScalarType to_scalar_type(DType d);
std::optional<DType> from_scalar_type(at::ScalarType t);

// libtorch errors carry a C++ or TorchScript backtrace; users need the one
// line that says what went wrong ("mat1 and mat2 shapes cannot be multiplied").
std::string torch_error_line(const std::exception& e);

// What a request feeds the model: one tensor, or several -- positional, or
// named by the forward's arguments (`names` then parallel to `tensors`).
// `specs[i]` is the trace's spec tensor i came from (null for one an op made,
// such as tokenize's mask).
struct Inputs {
  std::vector<at::Tensor> tensors;
  std::vector<std::string> names;
  std::vector<const InputSpec*> specs;
  bool empty() const { return tensors.empty(); }
};

// One raw input tensor: synthesised from its seed, read from its .npy file,
// or built from inline data. Throws Error(bad_input).
// An image input becomes its encoded bytes and a text input its UTF-8 bytes
// (a 1-D uint8 tensor): reading or receiving them is the `input` stage; the
// profile's `decode` or `tokenize` op turns them into tensors.
at::Tensor make_input(const TraceRequest& request, const InputSpec& spec,
                      const std::vector<std::int64_t>& default_shape, DType default_dtype,
                      const std::string& trace_path);
// Every input of the request (its `input`, or each of its `inputs`).
at::Tensor make_input(const TraceRequest& request, const std::vector<std::int64_t>& default_shape, DType default_dtype,
                      const std::string& trace_path);  // of request.input
Inputs make_inputs(const TraceRequest& request, const std::vector<std::int64_t>& default_shape, DType default_dtype,
                   const std::string& trace_path);
// Where a request's input errors point: "TRACE:LINE" when the request came
// from a trace, else "request ID".
std::string request_where(const std::string& trace_path, const TraceRequest& request);
// Reads a NumPy .npy file (C order, little-endian). Throws Error(bad_input) naming the file.
at::Tensor read_npy(const std::string& path);

// The profile's preprocessing ops, with their constants prepared once.
class Preprocessor {
 public:
  // Loads a tokenize op's model: Error(bad_input) naming the profile line when it is not one.
  explicit Preprocessor(const std::vector<PreprocessOp>& ops, std::string trace_path = {},
                        const std::string& profile_source = {});
  ~Preprocessor();
  // Runs every op as its own child span of `parent`, on each input. Throws
  // Error naming the request and op when an op cannot apply to an input.
  at::Tensor run(at::Tensor x, const TraceRequest& request, RequestRecord& record, std::int32_t parent) const;
  Inputs run(Inputs x, const TraceRequest& request, RequestRecord& record, std::int32_t parent) const;

 private:
  struct Step {
    PreprocessOp op;
    std::uint32_t name;                                // interned span name
    at::Tensor mean, std;                              // normalize, shaped [1, C, 1, 1]
    std::vector<std::int64_t> permutation;             // layout
    std::shared_ptr<const text::Tokenizer> tokenizer;  // tokenize
    std::int64_t pad_id = 0;                           // tokenize
    std::size_t part = 0;                              // index in preprocess_op_names(): its report row
  };
  void tokenize(const Step& step, Inputs& x, const TraceRequest& request, RequestRecord& record,
                std::int32_t span) const;
  std::vector<Step> steps_;
  std::size_t parts_ = 0;   // distinct op names
  std::string trace_path_;  // for decode errors
  std::uint32_t truncate_name_ = 0;
  mutable std::atomic<std::uint64_t> texts_{0}, truncated_{0}, empty_{0};
};

// Attributes the time inside the forward pass to aten operators, through
// libtorch's RecordFunction observer callbacks. One global callback serves
// all workers; each thread records only while it has an active Scope.
class OpRecorder {
 public:
  static void install();  // idempotent
  class Scope {
   public:
    Scope(bool enabled, RequestRecord& record, std::int32_t parent);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    bool enabled_;
  };
};

}  // namespace inferprof::detail
