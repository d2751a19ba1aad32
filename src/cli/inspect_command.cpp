// `inferprof inspect MODEL`: what the model takes, what the profile gives it,
// and whether that works (a trial forward), with what to do when it does not.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <sstream>

#include "base/json.hpp"
#include "base/text.hpp"
#include "cli/arg_check.hpp"
#include "cli/commands.hpp"
#include "cli/input_options.hpp"
#include "inferprof/error.hpp"
#include "inferprof/inspect.hpp"

namespace inferprof::cli {

std::vector<std::int64_t> parse_shape_option(const std::string& text) {
  std::vector<std::int64_t> shape;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) {
    try {
      std::size_t used = 0;
      long long v = std::stoll(part, &used);
      if (used != part.size() || v <= 0) throw std::invalid_argument("bad");
      shape.push_back(v);
    } catch (const std::exception&) {
      throw bad_input(
          fmt::format("--shape '{}': expected positive integers separated by commas, like 1,3,224,224", text));
    }
  }
  if (shape.empty()) throw bad_input("--shape is empty: expected e.g. 1,16");
  return shape;
}

std::string token_inputs_text(const std::vector<InputSpec>& inputs) {
  std::vector<std::string> parts;
  for (const InputSpec& in : inputs) {
    const auto [low, high] = in.range.value_or(std::array<std::int64_t, 2>{0, 1});
    parts.push_back(fmt::format("{} {} int64 {}", in.name, format_shape(in.shape),
                                high - low == 1 ? fmt::format("= {}", low) : fmt::format("in [{}, {})", low, high)));
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

DType parse_dtype_option(const std::string& text) {
  if (auto d = parse_dtype(text)) return *d;
  throw bad_input(fmt::format(
      "--dtype '{}': expected one of uint8, int8, int16, int32, int64, float16, float32, float64, bool", text));
}

namespace {

struct InspectArgs {
  std::int64_t seq_len = 0;
  std::string model, profile, shape, dtype;
  std::string format = "table";
};

std::string input_text(const Inspection& r) {
  if (r.image) return "a synthesised 640x480 JPEG (the profile decodes images)";
  if (r.text) return "a sentence as a text request (the profile tokenizes)";
  if (!r.inputs.empty()) return token_inputs_text(r.inputs) + " (an embedding takes the ids)";
  if (r.shape.empty()) return "none";
  return fmt::format("{} {} (from {})", format_shape(r.shape), dtype_name(r.dtype), r.source);
}

std::string render_table(const Inspection& r, const std::string& profile) {
  const ModelInfo& m = r.model;
  std::string out;
  auto row = [&](std::string_view label, const std::string& value) { out += fmt::format("{:<12}{}\n", label, value); };
  row("model",
      fmt::format("{} ({}, {}, loaded in {:.1f} ms)", m.path, m.hash, report::human_bytes(m.file_bytes), m.load_ms));
  if (m.meta.input_shape.empty() && m.meta.arch == "unknown")
    row("metadata", "none (no inferprof.json: not made by gen-model)");
  else
    row("metadata",
        fmt::format("arch {}, input {} {}, seed {} (inferprof.json)", m.meta.arch, format_shape(m.meta.input_shape),
                    m.meta.input_dtype ? dtype_name(*m.meta.input_dtype) : "?", m.meta.seed));
  row("parameters", fmt::format("{} ({})", report::group_thousands(static_cast<std::uint64_t>(m.parameters)),
                                report::human_bytes(r.parameter_bytes)));
  std::vector<std::string> args;
  for (const auto& a : r.arguments)
    args.push_back(fmt::format("{}: {}", a.name, a.type));
  row("forward", fmt::format("forward({}) -> {}", fmt::join(args, ", "), r.returns));
  row("expects", r.expects.empty() ? std::string("unknown (no conv, linear or embedding weight first)") : r.expects);
  row("profile", profile.empty() ? std::string("default") : profile);
  row("input", input_text(r));
  if (!r.trial_ran)
    row("trial", "not run: " + r.error);
  else if (r.trial_ok)
    row("trial",
        fmt::format("ok in {:.1f} ms: output {}", r.trial_ms,
                    r.output_shape.empty() ? r.returns + " (not cached: only tensors are)"
                                           : fmt::format("{} {}", format_shape(r.output_shape), r.output_dtype)));
  else
    row("trial", "FAILED: " + r.error);
  return out;
}

std::string render_json(const Inspection& r, const std::string& profile) {
  const ModelInfo& m = r.model;
  report::JsonWriter w;
  w.begin_object();
  w.key("model").begin_object();
  w.field("path", m.path).field("hash", m.hash).field("file_bytes", m.file_bytes);
  w.field("parameters", m.parameters).field("parameter_bytes", r.parameter_bytes);
  w.field_number("load_ms", m.load_ms, 3);
  w.end_object();
  w.key("metadata").begin_object();
  w.field("arch", m.meta.arch);
  w.key("input_shape").begin_array(true);
  for (auto d : m.meta.input_shape)
    w.value(d);
  w.end_array();
  w.key("input_dtype");
  if (m.meta.input_dtype)
    w.value(dtype_name(*m.meta.input_dtype));
  else
    w.null();
  w.field("seed", m.meta.seed);
  w.end_object();
  w.key("forward").begin_object();
  w.key("arguments").begin_array();
  for (const auto& a : r.arguments) {
    w.begin_object();
    w.field("name", a.name).field("type", a.type);
    w.end_object();
  }
  w.end_array();
  w.field("returns", r.returns);
  w.end_object();
  w.field("expects", r.expects);
  w.field("profile", profile.empty() ? std::string("default") : profile);
  w.key("input").begin_object();
  w.field("image", r.image);
  w.key("shape").begin_array(true);
  for (auto d : r.shape)
    w.value(d);
  w.end_array();
  w.field("dtype", dtype_name(r.dtype)).field("source", r.source);
  w.field("text", r.text);
  w.key("inputs").begin_array();
  for (const InputSpec& in : r.inputs) {
    w.begin_object().field("name", in.name);
    w.key("shape").begin_array(true);
    for (auto d : in.shape)
      w.value(d);
    w.end_array();
    w.key("range").begin_array(true).value((*in.range)[0]).value((*in.range)[1]).end_array();
    w.end_object();
  }
  w.end_array();
  w.end_object();
  w.key("trial").begin_object();
  w.field("ran", r.trial_ran).field("ok", r.trial_ok);
  w.field_number("ms", r.trial_ms, 3);
  w.key("output_shape").begin_array(true);
  for (auto d : r.output_shape)
    w.value(d);
  w.end_array();
  w.field("output_dtype", r.output_dtype);
  w.field("error", r.error);
  w.end_object();
  w.end_object();
  return w.str() + "\n";
}

}  // namespace

Runner add_inspect_command(CLI::App& app) {
  auto a = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "What a model takes, what the profile gives it, and whether that works (a trial forward)");
  cmd->add_option("model", a->model, "TorchScript model file (model.pt)")->required();
  cmd->add_option("--profile", a->profile, "Pipeline profile: a name from profiles/ or a .toml path")
      ->default_str("default");
  cmd->add_option("--shape", a->shape, "Try this input shape instead of the profile's or the model's (1,3,224,224)");
  cmd->add_option("--dtype", a->dtype, "Try this input dtype instead of the profile's or the model's");
  cmd->add_option("--seq-len", a->seq_len,
                  "A model taking token ids: the sequence length to try (default: its metadata's, else 128)")
      ->check(whole_at_least(1, a->seq_len));
  cmd->add_option("--format", a->format, "What to print: table or json")
      ->check(one_of({"table", "json"}))
      ->default_str("table");
  return [a] {
    InspectOptions options;
    if (!a->shape.empty()) options.shape = parse_shape_option(a->shape);
    if (!a->dtype.empty()) options.dtype = parse_dtype_option(a->dtype);
    options.seq_len = a->seq_len;
    const Profile profile = load_profile(a->profile);
    const Inspection r = inspect_model(read_model_file(a->model), profile, options);
    const std::string text = a->format == "json" ? render_json(r, profile.name) : render_table(r, profile.name);
    std::fputs(text.c_str(), stdout);
    // A trial that failed is a failed check (exit 1), as a diff gate is: the
    // report above says why and what to do.
    return r.trial_ok ? 0 : 1;
  };
}

}  // namespace inferprof::cli
