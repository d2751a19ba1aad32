#pragma once
// Profiles (profiles/*.toml): the pipeline a request goes through -- model
// settings, input defaults and the ordered preprocessing ops. Parsed and
// validated here with toml++; executed by the pipeline module.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "inferprof/cache.hpp"
#include "inferprof/enum_names.hpp"
#include "inferprof/trace.hpp"

namespace inferprof {

// How model_update events switch versions (replay/model_updates.hpp says how
// each works): [model] update in a profile, --update on the command line.
enum class UpdateMode : std::uint8_t { sync, async, preload };
template <>
struct EnumNames<UpdateMode> {
  static constexpr std::array<std::string_view, 3> names{"sync", "async", "preload"};
};

// What a preprocessing op does; a profile's `op = "..."`, in the order error
// messages list them.
enum class PreprocessKind : std::uint8_t {
  decode,
  to_tensor,
  to_float,
  to_half,
  scale,
  normalize,
  resize,
  center_crop,
  layout,
  tokenize
};
template <>
struct EnumNames<PreprocessKind> {
  static constexpr std::array<std::string_view, 10> names{"decode", "to_tensor", "to_float", "to_half",
                                                          "scale",  "normalize", "resize",   "center_crop",
                                                          "layout", "tokenize"};
};
// How resize interpolates: Pillow's filters (libtorch has the first three).
enum class ResizeMode : std::uint8_t { bilinear, bicubic, nearest, lanczos, box, hamming };
template <>
struct EnumNames<ResizeMode> {
  static constexpr std::array<std::string_view, 6> names{"bilinear", "bicubic", "nearest", "lanczos", "box", "hamming"};
};
// Whose resize: Pillow's on 8-bit pixels (what a PIL/torchvision service does
// to a decoded image) or libtorch's interpolate on a tensor (what a service
// resizing tensors does). automatic: as torchvision's Resize dispatches, PIL's
// for 8-bit pixels and libtorch's for anything else.
enum class ResizeImpl : std::uint8_t { automatic, pil, torch };
// The modes only Pillow has (libtorch's interpolate has bilinear, bicubic, nearest).
inline bool pillow_only(ResizeMode m) {
  return m != ResizeMode::bilinear && m != ResizeMode::bicubic && m != ResizeMode::nearest;
}
template <>
struct EnumNames<ResizeImpl> {
  static constexpr std::array<std::string_view, 3> names{"auto", "pil", "torch"};
};

// One preprocessing op with its parameters (only those its kind uses are set).
struct PreprocessOp {
  PreprocessKind op = PreprocessKind::to_float;
  double factor = 1.0;                      // scale
  std::vector<double> mean, std;            // normalize (per channel, dim 1)
  std::vector<std::int64_t> size;           // resize: [height, width] or [shorter side]; center_crop: [height, width]
  ResizeMode mode = ResizeMode::bilinear;   // resize
  bool antialias = false;                   // resize (torch): low-pass filter when shrinking (PIL always does)
  ResizeImpl impl = ResizeImpl::automatic;  // resize
  std::uint64_t max_pixels = 0;             // decode: refuse larger images (0: the built-in limit)
  std::string from, to;                     // layout: "NHWC" -> "NCHW" (any permutation of the same letters)
  std::string model;                // tokenize: the SentencePiece .model file (resolved against the profile's folder)
  std::int64_t max_length = 128;    // tokenize: ids are truncated or padded to this many
  bool mask = true;                 // tokenize: also give the attention mask (1 = token, 0 = padding)
  std::int64_t pad_id = -1;         // tokenize: the padding id (-1: the model's own, else 0)
  std::string mask_input = "mask";  // tokenize, in a named `inputs` map: the argument the mask feeds
  std::size_t line = 0;             // where it is defined, for errors
};

// Most intra-op threads a run may ask for: libtorch starts them all, and far
// more threads than cores only slows a run (100,000 hangs it).
inline constexpr int kMaxThreads = 1024;

struct Profile {
  std::string name = "default";
  std::string source = "<embedded default>";  // path it was read from
  std::string description;
  struct Model {
    std::string device = "cpu";
    int threads = 1;  // 0: one per core
    int warmup = 3;
    UpdateMode update = UpdateMode::sync;
  } model;
  struct Input {
    std::vector<std::int64_t> shape;  // empty: from the model's metadata
    std::optional<DType> dtype;
  } input;
  std::vector<PreprocessOp> preprocess;
  // [cache.l1], [cache.l2], [cache.l3]: the tiers as configured (unset: the
  // built-in defaults of cache_defaults()). [compare] caches = ["none", "l1", ...].
  struct Cache {
    std::optional<TierSpec> l1, l2, l3;
  } cache;
  std::vector<std::string> compare_caches;

  // A canonical text of everything that changes a preprocessed tensor, so the
  // preprocessed-input cache key changes when the profile does.
  std::string preprocess_fingerprint() const;
  // The preprocess stage's parts (preprocess_op_names below).
  std::vector<std::string> preprocess_op_names() const;
};

// The preprocess stage's parts, as the reports name them: each op's name
// once, in the order ops first appear (two resize ops are one part).
std::vector<std::string> preprocess_op_names(const std::vector<PreprocessOp>& ops);

// Parses TOML text; `source` names it in errors ("profiles/x.toml:12: ...").
// Throws Error(bad_input) for bad syntax, unknown ops, wrong types.
Profile parse_profile(std::string_view toml_text, const std::string& source);
// "cpu", "cuda" or "cuda:N" (N digits): what [model] device and --device accept.
bool is_device_name(std::string_view device);

// NAME (looked up as NAME.toml in the profile folders) or PATH (contains '/'
// or ends in .toml). An empty spec gives the embedded default profile.
// Folders searched for a name: $INFERPROF_PROFILES_DIR, the folder next to the
// installed binary (../share/inferprof/profiles), then the source tree's profiles/.
Profile load_profile(const std::string& name_or_path);

// Names of the profiles found in the search folders (for help and errors).
std::vector<std::string> available_profiles();

// The tiers named in `which` ("none", "l1", "l1,l2,l3", ...): each from the
// profile's [cache.lN], else the built-in default (l1 lru:1000 in-process,
// l2 lru:100000 in-process, l3 LMDB in `scratch_dir`), then `overrides`
// (--tier) by tier name; `redis_url` moves l2 and (unless the profile places
// it) l3 onto Redis. Throws Error(bad_input) naming what is wrong.
std::vector<TierSpec> resolve_tiers(const Profile& profile, const std::string& which,
                                    const std::vector<TierSpec>& overrides, const std::string& redis_url,
                                    const std::string& scratch_dir);

}  // namespace inferprof
