#include "inferprof/profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "base/read_file.hpp"
#include "inferprof/error.hpp"
#include "inferprof/printable.hpp"

namespace inferprof {
namespace embedded {
extern const std::string_view default_profile_toml;
}

namespace {

namespace fs = std::filesystem;

// Sections reserved for later versions (model store, update modes); a
// profile may carry them before this build understands them.
const std::set<std::string_view> kReservedSections = {"store", "update"};

struct Ctx {
  const std::string& source;
  [[noreturn]] void fail(const toml::node* node, std::string_view what) const {
    std::size_t line = node ? node->source().begin.line : 0;
    if (line == 0) throw bad_input(fmt::format("{}: {}", source, printable(what)));
    // Keys, op names and values are the file's text: one printable line whatever they hold.
    throw bad_input(at_line(source, line, printable(what)));
  }
};

void reject_unknown_keys(const Ctx& ctx, const toml::table& table, std::string_view where,
                         std::initializer_list<std::string_view> known) {
  for (auto&& [key, node] : table) {
    if (std::find(known.begin(), known.end(), key.str()) == known.end())
      ctx.fail(&node, fmt::format("unknown key '{}' in {} (expected {})", key.str(), where, fmt::join(known, ", ")));
  }
}

std::string get_string(const Ctx& ctx, const toml::table& t, std::string_view key, std::string_view where,
                       std::string fallback) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_string()) ctx.fail(n, fmt::format("'{}' in {} must be a string", key, where));
  return std::string(*n->value<std::string_view>());
}

// TOML has inf and nan; no setting here means anything with them.
double get_number(const Ctx& ctx, const toml::node& n, std::string_view what) {
  if (auto v = n.value<double>(); v && std::isfinite(*v)) return *v;  // integers convert too
  ctx.fail(&n, fmt::format("{} must be a finite number", what));
}

std::int64_t get_int(const Ctx& ctx, const toml::table& t, std::string_view key, std::string_view where,
                     std::int64_t fallback, std::int64_t min,
                     std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_integer()) ctx.fail(n, fmt::format("'{}' in {} must be an integer", key, where));
  auto v = *n->value<std::int64_t>();
  if (v < min) ctx.fail(n, fmt::format("'{}' in {} must be >= {}", key, where, min));
  if (v > max) ctx.fail(n, fmt::format("'{}' in {} must be between {} and {} (got {})", key, where, min, max, v));
  return v;
}

std::vector<double> get_numbers(const Ctx& ctx, const toml::node* n, std::string_view what) {
  std::vector<double> out;
  const toml::array* arr = n ? n->as_array() : nullptr;
  if (!arr || arr->empty()) ctx.fail(n, fmt::format("{} must be a non-empty array of numbers", what));
  for (auto&& e : *arr)
    out.push_back(get_number(ctx, e, what));
  return out;
}

std::vector<std::int64_t> get_dims(const Ctx& ctx, const toml::node* n, std::string_view what) {
  std::vector<std::int64_t> out;
  const toml::array* arr = n ? n->as_array() : nullptr;
  if (!arr || arr->empty()) ctx.fail(n, fmt::format("{} must be a non-empty array of positive integers", what));
  for (auto&& e : *arr) {
    auto v = e.value<std::int64_t>();
    if (!e.is_integer() || !v || *v <= 0)
      ctx.fail(&e, fmt::format("{} must be a non-empty array of positive integers", what));
    out.push_back(*v);
  }
  return out;
}

// resize's size, mode, impl and antialias, checked against each other.
void parse_resize(const Ctx& ctx, const toml::table& t, const toml::node& node, const std::string& where,
                  PreprocessOp& op) {
  reject_unknown_keys(ctx, t, where, {"op", "size", "mode", "antialias", "impl"});
  const toml::node* size = t.get("size") ? t.get("size") : &node;
  // An integer: the shorter side, aspect ratio kept (torchvision's Resize(256)).
  if (size->is_integer()) {
    auto v = *size->value<std::int64_t>();
    if (v <= 0) ctx.fail(size, "'size' of resize must be > 0");
    op.size = {v};
  } else {
    op.size = get_dims(ctx, size, "'size' of resize");
    if (op.size.size() != 2)
      ctx.fail(size, "'size' of resize must be [height, width], or one integer: the shorter side");
  }
  const std::optional<ResizeMode> mode = parse_enum<ResizeMode>(get_string(ctx, t, "mode", where, "bilinear"));
  if (!mode) ctx.fail(t.get("mode"), fmt::format("'mode' of resize must be {}", enum_choices<ResizeMode>("\"")));
  op.mode = *mode;
  const std::optional<ResizeImpl> impl = parse_enum<ResizeImpl>(get_string(ctx, t, "impl", where, "auto"));
  if (!impl) ctx.fail(t.get("impl"), fmt::format("'impl' of resize must be {}", enum_choices<ResizeImpl>("\"")));
  op.impl = *impl;
  if (const toml::node* aa = t.get("antialias")) {
    if (!aa->is_boolean()) ctx.fail(aa, "'antialias' of resize must be true or false");
    op.antialias = *aa->value<bool>();
    if (op.antialias && op.mode == ResizeMode::nearest)
      ctx.fail(aa, "'antialias' of resize needs mode \"bilinear\" or \"bicubic\"");
    // PIL cannot resize without its filter: switching it off models a service resizing tensors.
    if (!op.antialias && op.impl == ResizeImpl::pil)
      ctx.fail(aa, "'antialias = false' of resize needs impl = \"torch\" (PIL always filters when shrinking)");
    if (!op.antialias && op.impl == ResizeImpl::automatic) op.impl = ResizeImpl::torch;
  }
  if (pillow_only(op.mode) && op.impl == ResizeImpl::torch)
    ctx.fail(t.get("mode"),
             fmt::format("mode \"{}\" of resize is Pillow's: it needs impl = \"pil\" or \"auto\"", enum_name(op.mode)));
}

PreprocessOp parse_op(const Ctx& ctx, const toml::node& node, std::size_t index) {
  const toml::table* t = node.as_table();
  std::string where = fmt::format("preprocess op #{}", index + 1);
  if (!t) ctx.fail(&node, fmt::format("{} must be a table ([[preprocess]] with op = \"...\")", where));
  PreprocessOp op;
  op.line = node.source().begin.line;
  const toml::node* name = t->get("op");
  if (!name || !name->is_string()) ctx.fail(name ? name : &node, fmt::format("{} needs a string 'op'", where));
  const std::string_view spelt = *name->value<std::string_view>();
  const std::optional<PreprocessKind> kind = parse_enum<PreprocessKind>(spelt);
  if (!kind)
    ctx.fail(name, fmt::format("unknown preprocessing op '{}' (expected one of: {})", spelt,
                               fmt::join(EnumNames<PreprocessKind>::names, ", ")));
  op.op = *kind;
  where = fmt::format("preprocess op '{}'", spelt);

  if (op.op == PreprocessKind::to_float || op.op == PreprocessKind::to_half) {
    reject_unknown_keys(ctx, *t, where, {"op"});
  } else if (op.op == PreprocessKind::scale) {
    reject_unknown_keys(ctx, *t, where, {"op", "factor"});
    const toml::node* f = t->get("factor");
    if (!f) ctx.fail(&node, "preprocess op 'scale' needs 'factor'");
    op.factor = get_number(ctx, *f, "'factor'");
  } else if (op.op == PreprocessKind::normalize) {
    reject_unknown_keys(ctx, *t, where, {"op", "mean", "std"});
    op.mean = get_numbers(ctx, t->get("mean") ? t->get("mean") : &node, "'mean' of normalize");
    op.std = get_numbers(ctx, t->get("std") ? t->get("std") : &node, "'std' of normalize");
    if (op.mean.size() != op.std.size())
      ctx.fail(&node, fmt::format("normalize has {} means but {} stds", op.mean.size(), op.std.size()));
    for (double s : op.std)
      if (s == 0) ctx.fail(t->get("std"), "'std' of normalize must not contain 0");
  } else if (op.op == PreprocessKind::resize) {
    parse_resize(ctx, *t, node, where, op);
  } else if (op.op == PreprocessKind::center_crop) {
    reject_unknown_keys(ctx, *t, where, {"op", "size"});
    op.size = get_dims(ctx, t->get("size") ? t->get("size") : &node, "'size' of center_crop");
    if (op.size.size() != 2) ctx.fail(t->get("size"), "'size' of center_crop must be [height, width]");
  } else if (op.op == PreprocessKind::decode) {
    reject_unknown_keys(ctx, *t, where, {"op", "max_pixels"});
    op.max_pixels = static_cast<std::uint64_t>(get_int(ctx, *t, "max_pixels", where, 0, 1));
    if (index != 0)
      ctx.fail(&node, "'decode' must be the first preprocessing op (it turns the encoded image into pixels)");
  } else if (op.op == PreprocessKind::to_tensor) {
    reject_unknown_keys(ctx, *t, where, {"op"});
  } else if (op.op == PreprocessKind::tokenize) {
    reject_unknown_keys(ctx, *t, where, {"op", "model", "max_length", "mask", "pad_id", "mask_input"});
    op.model = get_string(ctx, *t, "model", where, "");
    if (op.model.empty()) ctx.fail(&node, "preprocess op 'tokenize' needs 'model' (a SentencePiece .model file)");
    // Relative to the profile, so a profile and its tokenizer move together.
    if (fs::path(op.model).is_relative()) op.model = (fs::path(ctx.source).parent_path() / op.model).string();
    op.max_length = get_int(ctx, *t, "max_length", where, 128, 1, 1 << 20);
    if (const toml::node* m = t->get("mask")) {
      if (!m->is_boolean()) ctx.fail(m, "'mask' of tokenize must be true or false");
      op.mask = *m->value<bool>();
    }
    op.pad_id = get_int(ctx, *t, "pad_id", where, -1, 0, std::numeric_limits<std::int32_t>::max());
    op.mask_input = get_string(ctx, *t, "mask_input", where, "mask");
    if (index != 0) ctx.fail(&node, "'tokenize' must be the first preprocessing op (it turns the text into ids)");
  } else if (op.op == PreprocessKind::layout) {
    reject_unknown_keys(ctx, *t, where, {"op", "from", "to"});
    op.from = get_string(ctx, *t, "from", where, "");
    op.to = get_string(ctx, *t, "to", where, "");
    std::string a = op.from, b = op.to;
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    bool distinct = std::adjacent_find(a.begin(), a.end()) == a.end();
    if (a.empty() || a != b || !distinct)
      ctx.fail(&node, fmt::format("layout needs 'from' and 'to' naming the same distinct axes (got '{}' -> '{}')",
                                  op.from, op.to));
  }
  return op;
}

// [cache.lN]: policy, capacity (entries), max_bytes (integer or "64MB"),
// ttl ("30s" or seconds), backend, url (redis), path (lmdb).
TierSpec parse_tier(const Ctx& ctx, const toml::node& node, CacheLevel tier) {
  std::string where = fmt::format("[cache.{}]", enum_name(tier));
  const toml::table* t = node.as_table();
  if (!t) ctx.fail(&node, where + " must be a table");
  reject_unknown_keys(ctx, *t, where, {"policy", "capacity", "max_bytes", "ttl", "backend", "url", "path"});
  TierSpec spec;
  spec.tier = tier;
  std::string policy = get_string(ctx, *t, "policy", where, "lru");
  // The spec's spelling, parameters included: "s3fifo(small=0.2)".
  try {
    spec.policy = parse_policy_spec(policy, spec.params, fmt::format("'policy' in {}", where));
  } catch (const Error& e) {
    ctx.fail(t->get("policy"), e.what());
  }
  spec.max_entries = static_cast<std::uint64_t>(get_int(ctx, *t, "capacity", where, 0, 0));
  if (const toml::node* b = t->get("max_bytes")) {
    if (b->is_integer() && *b->value<std::int64_t>() >= 0) {
      spec.max_bytes = static_cast<std::uint64_t>(*b->value<std::int64_t>());
    } else {
      auto bytes = b->is_string() ? parse_byte_size(*b->value<std::string_view>()) : std::nullopt;
      if (!bytes) ctx.fail(b, fmt::format("'max_bytes' in {} must be bytes or a size like \"64MB\"", where));
      spec.max_bytes = *bytes;
    }
  }
  if (const toml::node* ttl = t->get("ttl")) {
    std::optional<double> s;
    if (ttl->is_number())
      s = ttl->value<double>();
    else if (ttl->is_string())
      s = parse_ttl_s(*ttl->value<std::string_view>());
    const bool zero = (s && *s == 0) || (ttl->is_string() && is_zero_ttl(*ttl->value<std::string_view>()));
    if (zero) ctx.fail(ttl, fmt::format("'ttl' in {} must be above 0 (leave it out and entries never expire)", where));
    if (!s || *s < 0) ctx.fail(ttl, fmt::format("'ttl' in {} must be seconds or a duration like \"30s\"", where));
    spec.ttl_s = *s;
  }
  const std::string backend = get_string(ctx, *t, "backend", where, tier == CacheLevel::l3 ? "lmdb" : "memory");
  const std::optional<TierBackend> parsed = parse_enum<TierBackend>(backend);
  if (!parsed)
    ctx.fail(t->get("backend"),
             fmt::format("'backend' in {} must be {} (got '{}')", where, enum_choices<TierBackend>("\""), backend));
  spec.backend = *parsed;
  spec.location = get_string(ctx, *t, spec.backend == TierBackend::lmdb ? "path" : "url", where, "");
  if (tier == CacheLevel::l1 && spec.backend != TierBackend::memory)
    ctx.fail(t->get("backend"), "[cache.l1] is in-process: backend must be \"memory\"");
  if (tier != CacheLevel::l3 && spec.backend == TierBackend::lmdb)
    ctx.fail(t->get("backend"), fmt::format("{} holds results: backend must be \"memory\" or \"redis\"", where));
  if (tier == CacheLevel::l3 && spec.backend == TierBackend::memory)
    ctx.fail(t->get("backend"), "[cache.l3] is the preprocessed-input cache: backend must be \"lmdb\" or \"redis\"");
  validate_tier_spec(spec, at_line(ctx.source, node.source().begin.line, where));
  return spec;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(fmt::format("cannot read profile '{}': {}", path.string(), std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> search_dirs() {
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("INFERPROF_PROFILES_DIR"); env && *env) dirs.emplace_back(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(exe.parent_path().parent_path() / "share" / "inferprof" / "profiles");
  dirs.emplace_back(INFERPROF_SOURCE_PROFILES_DIR);
  return dirs;
}

}  // namespace

std::vector<std::string> Profile::preprocess_op_names() const {
  return inferprof::preprocess_op_names(preprocess);
}

std::vector<std::string> preprocess_op_names(const std::vector<PreprocessOp>& ops) {
  std::vector<std::string> names;
  for (const PreprocessOp& op : ops) {
    std::string name(enum_name(op.op));
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(std::move(name));
  }
  return names;
}

std::string Profile::preprocess_fingerprint() const {
  std::string out;
  for (const auto& op : preprocess) {
    out += fmt::format("{}(factor={};mean={};std={};size={};mode={};from={};to={})", enum_name(op.op), op.factor,
                       fmt::join(op.mean, ","), fmt::join(op.std, ","), fmt::join(op.size, ","), enum_name(op.mode),
                       op.from, op.to);
    // Only where it is set, so that existing profiles keep their L3 keys.
    if (op.antialias) out += "(antialias)";
    // Whose resize changes the tensors, so it changes the L3 keys.
    if (op.op == PreprocessKind::resize) out += fmt::format("(impl={})", enum_name(op.impl));
    if (op.op == PreprocessKind::tokenize)
      out += fmt::format("(model={};max_length={};mask={};pad_id={};mask_input={})", op.model, op.max_length, op.mask,
                         op.pad_id, op.mask_input);
    out += "|";
  }
  out += fmt::format("input(shape={};dtype={})", fmt::join(input.shape, ","),
                     input.dtype ? dtype_name(*input.dtype) : "model");
  return out;
}

bool is_device_name(std::string_view d) {
  if (d == "cpu" || d == "cuda") return true;
  return d.size() > 5 && d.substr(0, 5) == "cuda:" && d.find_first_not_of("0123456789", 5) == std::string_view::npos;
}

Profile parse_profile(std::string_view text, const std::string& source) {
  Ctx ctx{source};
  toml::table root;
  try {
    root = toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    throw bad_input(
        at_line(source, e.source().begin.line, fmt::format("invalid TOML: {}", printable(e.description()))));
  }
  Profile p;
  p.source = source;
  for (auto&& [key, node] : root) {
    std::string_view k = key.str();
    if (k != "name" && k != "description" && k != "model" && k != "input" && k != "preprocess" && k != "cache" &&
        k != "compare" && !kReservedSections.count(k))
      ctx.fail(&node, fmt::format("unknown key '{}' (expected name, description, model, input, preprocess, cache)", k));
  }
  p.name = get_string(ctx, root, "name", "the profile", fs::path(source).stem().string());
  // The name heads tables and names compare's folders: no control or bidirectional characters.
  if (printable(p.name) != p.name)
    ctx.fail(root.get("name"),
             fmt::format("name '{}' has control characters (expected printable text)", printable(p.name)));
  p.description = get_string(ctx, root, "description", "the profile", "");

  if (const toml::node* n = root.get("model")) {
    const toml::table* m = n->as_table();
    if (!m) ctx.fail(n, "[model] must be a table");
    reject_unknown_keys(ctx, *m, "[model]", {"device", "threads", "warmup", "update"});
    p.model.device = get_string(ctx, *m, "device", "[model]", "cpu");
    if (!is_device_name(p.model.device))
      ctx.fail(m->get("device"),
               fmt::format("'device' in [model] must be \"cpu\" or \"cuda[:N]\" (got '{}')", p.model.device));
    p.model.threads = static_cast<int>(get_int(ctx, *m, "threads", "[model]", 1, 0, kMaxThreads));
    p.model.warmup = static_cast<int>(get_int(ctx, *m, "warmup", "[model]", 3, 0, std::numeric_limits<int>::max()));
    const std::string update = get_string(ctx, *m, "update", "[model]", "sync");
    const std::optional<UpdateMode> mode = parse_enum<UpdateMode>(update);
    if (!mode)
      ctx.fail(m->get("update"),
               fmt::format("'update' in [model] must be {} (got '{}')", enum_choices<UpdateMode>("\""), update));
    p.model.update = *mode;
  }
  if (const toml::node* n = root.get("input")) {
    const toml::table* in = n->as_table();
    if (!in) ctx.fail(n, "[input] must be a table");
    reject_unknown_keys(ctx, *in, "[input]", {"shape", "dtype"});
    if (const toml::node* s = in->get("shape")) p.input.shape = get_dims(ctx, s, "'shape' in [input]");
    if (in->get("dtype")) {
      std::string d = get_string(ctx, *in, "dtype", "[input]", "");
      p.input.dtype = parse_dtype(d);
      if (!p.input.dtype)
        ctx.fail(in->get("dtype"), fmt::format("'dtype' in [input] must be one of uint8, int8, int16, int32, int64, "
                                               "float16, float32, float64, bool (got '{}')",
                                               d));
    }
  }
  if (const toml::node* n = root.get("preprocess")) {
    const toml::array* ops = n->as_array();
    if (!ops) ctx.fail(n, "'preprocess' must be an array of tables ([[preprocess]])");
    for (std::size_t i = 0; i < ops->size(); ++i)
      p.preprocess.push_back(parse_op(ctx, *ops->get(i), i));
  }
  if (const toml::node* n = root.get("cache")) {
    const toml::table* c = n->as_table();
    if (!c) ctx.fail(n, "[cache] must be a table of [cache.l1], [cache.l2], [cache.l3]");
    reject_unknown_keys(ctx, *c, "[cache]", {"l1", "l2", "l3"});
    if (const toml::node* t = c->get("l1")) p.cache.l1 = parse_tier(ctx, *t, CacheLevel::l1);
    if (const toml::node* t = c->get("l2")) p.cache.l2 = parse_tier(ctx, *t, CacheLevel::l2);
    if (const toml::node* t = c->get("l3")) p.cache.l3 = parse_tier(ctx, *t, CacheLevel::l3);
  }
  if (const toml::node* n = root.get("compare")) {
    const toml::table* c = n->as_table();
    if (!c) ctx.fail(n, "[compare] must be a table");
    reject_unknown_keys(ctx, *c, "[compare]", {"caches"});
    if (const toml::node* list = c->get("caches")) {
      const toml::array* arr = list->as_array();
      if (!arr) ctx.fail(list, "'caches' in [compare] must be an array of strings like \"l1,l2\"");
      for (auto&& e : *arr) {
        if (!e.is_string()) ctx.fail(&e, "'caches' in [compare] must be an array of strings like \"l1,l2\"");
        p.compare_caches.emplace_back(*e.value<std::string_view>());
      }
    }
  }
  return p;
}

Profile load_profile(const std::string& spec) {
  if (spec.empty()) return parse_profile(embedded::default_profile_toml, "<embedded default>");
  bool is_path = spec.find('/') != std::string::npos || fs::path(spec).extension() == ".toml";
  if (is_path) {
    const fs::file_status st = report::path_status(spec, fmt::format("profile '{}'", spec));
    if (!fs::exists(st)) throw bad_input(fmt::format("profile '{}' not found", spec));
    // Reading a FIFO would wait for a writer; a folder reads as nothing.
    if (!fs::is_regular_file(st)) throw bad_input(fmt::format("profile '{}': not a regular file", spec));
    return parse_profile(read_file(spec), spec);
  }
  for (const auto& dir : search_dirs()) {
    fs::path candidate = dir / (spec + ".toml");
    if (fs::is_regular_file(candidate)) return parse_profile(read_file(candidate), candidate.string());
  }
  if (spec == "default") return parse_profile(embedded::default_profile_toml, "<embedded default>");
  auto names = available_profiles();
  throw bad_input(fmt::format("no profile named '{}' (available: {}; or give a path to a .toml file)", spec,
                              names.empty() ? std::string("none found") : fmt::format("{}", fmt::join(names, ", "))));
}

std::vector<std::string> available_profiles() {
  std::set<std::string> names;
  for (const auto& dir : search_dirs()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
      if (entry.path().extension() == ".toml") names.insert(entry.path().stem().string());
  }
  return {names.begin(), names.end()};
}

}  // namespace inferprof
