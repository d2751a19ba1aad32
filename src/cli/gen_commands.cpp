#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "base/text.hpp"
#include "cli/arg_check.hpp"
#include "cli/commands.hpp"
#include "cli/input_options.hpp"
#include "image/image.hpp"
#include "inferprof/error.hpp"
#include "inferprof/inspect.hpp"
#include "inferprof/pipeline.hpp"
#include "inferprof/printable.hpp"
#include "inferprof/report.hpp"
#include "inferprof/trace.hpp"

namespace inferprof::cli {

Runner add_gen_model_command(CLI::App& app) {
  auto opts = std::make_shared<GenModelOptions>();
  CLI::App* cmd = app.add_subcommand("gen-model", "Write a TorchScript model built in C++ (random weights)");
  cmd->add_option("--arch", opts->arch,
                  "mlp (tests), cnn (small image model), resnet18 (ResNet-18's shape) or text (forward(ids, mask))")
      ->check(one_of(model_archs()))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Weight seed: two seeds give two versions of one model")->capture_default_str();
  cmd->add_option("-o,--output", opts->out_path, "Output file (model.pt)")->required();
  return [opts] {
    ModelMetadata meta = generate_model(*opts);
    std::fprintf(stdout, "wrote %s: %s, %s parameters, input %s %s, seed %llu\n", opts->out_path.c_str(),
                 meta.arch.c_str(), fmt::format("{:L}", meta.parameters).c_str(),
                 format_shape(meta.input_shape).c_str(),
                 meta.input_dtype ? std::string(dtype_name(*meta.input_dtype)).c_str() : "?",
                 static_cast<unsigned long long>(meta.seed));
    return 0;
  };
}

namespace {

struct GenImagesOptions {
  std::string out_dir;
  std::string sizes = "320x240,1920x1080,3840x2160";
  std::string formats = "jpeg,png";
  int count = 1;
  int quality = 90;
  std::uint64_t seed = 1;
};

std::pair<std::uint32_t, std::uint32_t> parse_size(const std::string& text) {
  const auto x = text.find('x');
  try {
    std::size_t used_w = 0, used_h = 0;
    if (x == std::string::npos) throw std::invalid_argument("no x");
    const long long w = std::stoll(text.substr(0, x), &used_w);
    const long long h = std::stoll(text.substr(x + 1), &used_h);
    if (used_w != x || used_h != text.size() - x - 1 || w <= 0 || h <= 0 || w > 16384 || h > 16384)
      throw std::invalid_argument("range");
    return {static_cast<std::uint32_t>(w), static_cast<std::uint32_t>(h)};
  } catch (const std::exception&) {
    throw bad_input(fmt::format("--sizes: '{}': expected WIDTHxHEIGHT, each 1..16384, like 1920x1080", text));
  }
}

}  // namespace

Runner add_gen_images_command(CLI::App& app) {
  auto opts = std::make_shared<GenImagesOptions>();
  CLI::App* cmd =
      app.add_subcommand("gen-images", "Write synthetic pictures as JPEG and PNG files (demo and test inputs)");
  cmd->add_option("--out", opts->out_dir, "Output folder (created if missing)")->required();
  cmd->add_option("--sizes", opts->sizes, "WIDTHxHEIGHT,... (up to 16384 each)")->capture_default_str();
  cmd->add_option("--formats", opts->formats, "jpeg, png or both")->capture_default_str();
  cmd->add_option("--count", opts->count, "Pictures per size and format")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  cmd->add_option("--quality", opts->quality, "JPEG quality")->check(CLI::Range(1, 100))->capture_default_str();
  cmd->add_option("--seed", opts->seed, "Picture seed")->capture_default_str();
  return [opts] {
    std::vector<std::pair<std::uint32_t, std::uint32_t>> sizes;
    for (const auto& s : report::split(opts->sizes, ','))
      sizes.push_back(parse_size(s));
    if (sizes.empty()) throw bad_input("--sizes is empty: expected e.g. 1920x1080");
    bool jpeg = false, png = false;
    for (const auto& f : report::split(opts->formats, ',')) {
      if (f == "jpeg" || f == "jpg")
        jpeg = true;
      else if (f == "png")
        png = true;
      else
        throw bad_input(fmt::format("--formats: '{}': expected jpeg or png", f));
    }
    if (!jpeg && !png) throw bad_input("--formats is empty: expected jpeg, png or jpeg,png");
    namespace fs = std::filesystem;
    output::claim_dir(opts->out_dir);
    // The one atomic writer: a failure leaves no half file, and its
    // temporary name is never a file or link put there by someone else.
    auto write = [&](const std::string& name, const std::string& bytes) {
      const fs::path final_path = fs::path(opts->out_dir) / name;
      write_file_atomic(opts->out_dir, name, bytes);
      std::fprintf(stdout, "wrote %s (%zu bytes)\n", final_path.string().c_str(), bytes.size());
    };
    std::uint64_t seed = opts->seed;
    for (const auto& [w, h] : sizes) {
      for (int i = 0; i < opts->count; ++i, ++seed) {
        const std::string rgb = image::synth_picture(w, h, seed);
        try {
          if (jpeg) write(fmt::format("{}x{}-{}.jpg", w, h, i), image::encode_jpeg(rgb, w, h, opts->quality));
          if (png) write(fmt::format("{}x{}-{}.png", w, h, i), image::encode_png(rgb, w, h));
        } catch (const image::DecodeError& e) {
          throw runtime_failure(e.what);
        }
      }
    }
    return 0;
  };
}

namespace {

namespace fs = std::filesystem;

// Empty when a file is an image decode reads, by its first bytes (as decode
// recognises it), not its name; otherwise what to count it under when skipped.
std::string skip_label(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return "unreadable";
  std::uint8_t head[12] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  if (image::sniff(head, static_cast<std::size_t>(in.gcount())) != image::Format::unknown) return {};
  std::string ext = p.extension().string();
  for (char& c : ext)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext.empty() ? "without extension" : ext;
}

// The JPEG, PNG and WebP files under `dir` (sorted: the same folder, the same
// trace), as paths relative to the trace's folder, which is how the trace
// reader resolves them. What it skipped goes to `skipped_note` (said once the
// trace is written: an error stays one line).
std::vector<std::string> image_paths(const std::string& dir, const std::string& trace, std::string& skipped_note) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw bad_input(fmt::format("--images '{}': not a folder", dir));
  std::vector<fs::path> found;
  std::map<std::string, std::uint64_t> skipped;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;  // folders are walked; FIFOs and devices are never opened
    const std::string label = skip_label(it->path());
    if (label.empty())
      found.push_back(it->path());
    else
      ++skipped[label];
  }
  if (ec) throw bad_input(fmt::format("--images '{}': cannot list it ({})", dir, ec.message()));
  std::uint64_t n = 0;
  std::string reasons;
  for (const auto& [label, count] : skipped) {
    n += count;
    reasons += fmt::format("{}{} {}", reasons.empty() ? "" : ", ", count, label);
  }
  const std::string skips =
      n ? fmt::format("skipped {} file{} not JPEG, PNG or WebP by their bytes ({})", n, n == 1 ? "" : "s", reasons)
        : "";
  if (found.empty())
    throw bad_input(fmt::format("--images '{}': no JPEG, PNG or WebP files in it{}", dir, n ? "; " + skips : ""));
  if (n) skipped_note = fmt::format("inferprof: gen-trace: --images '{}': {}\n", printable(dir), skips);
  std::sort(found.begin(), found.end());
  // Normalised first: "./a.jpg" against "../t.jsonl" has no lexical relative path (it came out empty).
  const fs::path base = fs::absolute(fs::path(trace)).lexically_normal().parent_path();
  std::vector<std::string> out;
  for (const auto& p : found) {
    const fs::path abs = fs::absolute(p).lexically_normal();
    const fs::path rel = abs.lexically_relative(base);
    out.push_back((rel.empty() ? abs : rel).generic_string());
  }
  return out;
}

// The non-blank lines of `path`, each a request's text.
std::vector<std::string> text_lines(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw bad_input(fmt::format("--texts '{}': a folder, not a text file", path));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw bad_input(fmt::format("--texts '{}': cannot open it", path));
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) out.push_back(line);
  }
  if (out.empty()) throw bad_input(fmt::format("--texts '{}': no non-blank lines", path));
  return out;
}

struct GenTraceArgs {
  std::string shape = "1,16", dtype = "float32", out, like, profile, images, texts;
  std::int64_t seq_len = 0;
};

}  // namespace

Runner add_gen_trace_command(CLI::App& app) {
  auto opts = std::make_shared<GenTraceOptions>();
  auto a = std::make_shared<GenTraceArgs>();
  CLI::App* cmd = app.add_subcommand("gen-trace", "Write a reproducible synthetic request trace (JSON lines)");
  cmd->add_option("--requests", opts->requests, "Number of requests")->capture_default_str();
  CLI::Option* keys = cmd->add_option("--keys", opts->keys, "Distinct inputs (cache keys)")->capture_default_str();
  cmd->add_option("--zipf", opts->zipf, "Popularity skew of keys (0 = uniform)")->capture_default_str();
  cmd->add_option("--rate", opts->rate, "Poisson arrivals per second for ts_ms (0 = no timestamps)")
      ->capture_default_str();
  CLI::Option* shape = cmd->add_option("--shape", a->shape, "Input shape, comma-separated")->capture_default_str();
  CLI::Option* dtype = cmd->add_option("--dtype", a->dtype, "Input dtype")->capture_default_str();
  CLI::Option* like =
      cmd->add_option("--like", a->like,
                      "Shape and dtype that MODEL takes through --profile (checked with a trial forward)")
          ->type_name("MODEL");
  CLI::Option* profile =
      cmd->add_option("--profile", a->profile, "With --like: the profile the trace is for")->needs(like);
  cmd->add_option("--seq-len", a->seq_len,
                  "With --like, a model taking token ids: the sequence length (default: its metadata's, else 128)")
      ->check(whole_at_least(1, a->seq_len))
      ->needs(like);
  CLI::Option* images =
      cmd->add_option("--images", a->images, "One key per JPEG/PNG file in DIR (input.image, relative to the trace)")
          ->type_name("DIR");
  CLI::Option* texts =
      cmd->add_option("--texts", a->texts, "One key per non-blank line of FILE (input.text)")->type_name("FILE");
  like->excludes(images)->excludes(texts)->excludes(shape)->excludes(dtype);
  images->excludes(texts)->excludes(shape)->excludes(dtype);
  texts->excludes(shape)->excludes(dtype);
  (void)profile;
  cmd->add_option("--seed", opts->seed, "Random seed")->capture_default_str();
  cmd->add_option("--update-every-ms", opts->update_every_ms, "A model_update event every MS milliseconds (0 = none)")
      ->capture_default_str();
  cmd->add_option("--model", opts->model, "Model name in model_update events")->capture_default_str();
  cmd->add_option("-o,--output", a->out, "Output file (requests.jsonl)")->required();
  return [opts, a, keys] {
    std::string what;
    if (!a->like.empty()) {
      const Profile p = load_profile(a->profile);
      InspectOptions inspect;
      inspect.seq_len = a->seq_len;
      const Inspection r = inspect_model(read_model_file(a->like), p, inspect);
      if (r.image)
        throw bad_input(
            fmt::format("--like {}: profile '{}' decodes images: use --images DIR for its requests", a->like, p.name));
      if (r.text)
        throw bad_input(
            fmt::format("--like {}: profile '{}' tokenizes text: use --texts FILE for its requests", a->like, p.name));
      if (!r.trial_ok)
        throw bad_input(fmt::format("--like {}: {}", a->like, r.error.empty() ? "the trial forward failed" : r.error));
      opts->shape = r.shape;
      opts->dtype = r.dtype;
      opts->named_inputs = r.inputs;
      what =
          r.inputs.empty()
              ? fmt::format(", inputs {} {} (from {}, tried: ok)", format_shape(r.shape), dtype_name(r.dtype), r.source)
              : fmt::format(", inputs {} (an embedding takes the ids; tried: ok)", token_inputs_text(r.inputs));
    } else {
      opts->shape = parse_shape_option(a->shape);
      opts->dtype = parse_dtype_option(a->dtype);
    }
    std::string note;  // what was skipped or replaced: said once the trace is written
    if (!a->images.empty()) opts->images = image_paths(a->images, a->out, note);
    if (!a->texts.empty()) {
      opts->texts = text_lines(a->texts);
      if (const std::size_t bad = count_invalid_utf8(opts->texts))
        note = fmt::format(
            "inferprof: gen-trace: --texts '{}': {} of {} lines are not valid UTF-8: the trace has U+FFFD in place "
            "of their bad bytes\n",
            printable(a->texts), bad, opts->texts.size());
    }
    const std::size_t files = std::max(opts->images.size(), opts->texts.size());
    if (files > 0) {
      // Each file or line is a key; --keys, when given, a seeded sample of N (said below).
      if (keys->count() > 0 && opts->keys > files)
        throw bad_input(fmt::format("--keys {}: {} has only {} {}", opts->keys,
                                    opts->images.empty() ? a->texts : a->images, files,
                                    opts->images.empty() ? "lines" : "images"));
      if (keys->count() == 0) opts->keys = files;
      what = fmt::format(", {}", opts->images.empty() ? "input.text lines" : "input.image files");
      if (opts->keys < files)
        note +=
            fmt::format("inferprof: gen-trace: --keys {} uses {} of the {} {} (a sample by --seed); {} left out\n",
                        opts->keys, opts->keys, files, opts->images.empty() ? "lines" : "images", files - opts->keys);
    }
    generate_trace(*opts, a->out);
    std::fprintf(stdout, "wrote %s: %llu requests over %llu keys (zipf %.2f)%s%s\n", a->out.c_str(),
                 static_cast<unsigned long long>(opts->requests), static_cast<unsigned long long>(opts->keys),
                 opts->zipf, opts->rate > 0 ? fmt::format(", Poisson arrivals at {} req/s", opts->rate).c_str() : "",
                 what.c_str());
    std::fputs(note.c_str(), stderr);
    return 0;
  };
}

}  // namespace inferprof::cli
