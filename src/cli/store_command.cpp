// inferprof store put|ls|rm: publish, list and remove model versions in a
// store, so that a user can roll a model out from the shell.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>

#include "base/read_file.hpp"
#include "base/text.hpp"
#include "cli/arg_check.hpp"
#include "cli/commands.hpp"
#include "inferprof/error.hpp"
#include "inferprof/store.hpp"
#include "store/store_detail.hpp"

namespace inferprof::cli {
namespace {

struct StoreArgs {
  std::string url, ref, file, name, format = "table";
};

// A folder would read as 0 bytes and a device (/dev/zero) without end: only a
// non-empty regular file is a model.
std::string read_model_file(const std::string& path) {
  std::optional<std::string> bytes = report::read_regular_file(path, std::numeric_limits<std::uint64_t>::max());
  if (!bytes) throw bad_input(fmt::format("{}: cannot read the model file", path));
  if (bytes->empty()) throw bad_input(fmt::format("{}: the model file is empty", path));
  return std::move(*bytes);
}

std::string render_table(const std::vector<ModelMeta>& metas) {
  std::vector<std::vector<std::string>> rows = {{"NAME", "VERSION", "SIZE", "SHA256", "CREATED"}};
  for (const ModelMeta& m : metas)
    rows.push_back({m.name, m.version, report::human_bytes(m.size), m.sha256.substr(0, 12), m.created});
  std::vector<std::size_t> width(rows[0].size(), 0);
  for (const auto& r : rows)
    for (std::size_t i = 0; i < r.size(); ++i)
      width[i] = std::max(width[i], report::display_width(r[i]));
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t i = 0; i < r.size(); ++i) {
      // Sizes right-aligned, so that they compare at a glance.
      line += i == 2 ? report::pad_left(r[i], width[i]) : report::pad_right(r[i], width[i]);
      if (i + 1 < r.size()) line += "  ";
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line + "\n";
  }
  return out;
}

std::string render_csv(const std::vector<ModelMeta>& metas) {
  std::string out = "name,version,size,sha256,created\n";
  for (const ModelMeta& m : metas)
    out += fmt::format("{},{},{},{},{}\n", m.name, m.version, m.size, m.sha256, m.created);
  return out;
}

}  // namespace

Runner add_store_command(CLI::App& app) {
  auto args = std::make_shared<StoreArgs>();
  CLI::App* cmd = app.add_subcommand("store", "Publish, list and remove model versions in a model store");
  cmd->require_subcommand(1);
  const char* url_help = "The store: a folder, file:///path, or http(s)://host/path (read-only)";

  CLI::App* put = cmd->add_subcommand("put", "Store FILE as NAME@VERSION (file stores only); prints its metadata");
  put->add_option("url", args->url, url_help)->required();
  put->add_option("model", args->ref, "NAME@VERSION")->required();
  put->add_option("file", args->file, "The model file (model.pt)")->required();

  CLI::App* ls = cmd->add_subcommand("ls", "List the versions in a store");
  ls->add_option("url", args->url, url_help)->required();
  ls->add_option("name", args->name, "Only this model's versions");
  ls->add_option("--format", args->format, "table, json or csv")
      ->check(one_of({"table", "json", "csv"}))
      ->capture_default_str();

  CLI::App* rm = cmd->add_subcommand("rm", "Remove NAME@VERSION (file stores only)");
  rm->add_option("url", args->url, url_help)->required();
  rm->add_option("model", args->ref, "NAME@VERSION")->required();

  return [args, put, ls] {
    if (put->parsed()) {
      ModelRef ref = parse_model_ref(args->ref, "store put: the model");
      if (ref.version.empty())
        throw bad_input(fmt::format("store put: the model: expected NAME@VERSION, got '{}' (no version)", args->ref));
      auto remote = open_remote_store(args->url);
      std::string bytes = read_model_file(args->file);
      remote->put(ref, bytes);
      std::fputs(store_detail::meta_json(remote->meta(ref)).c_str(), stdout);
      return 0;
    }
    if (ls->parsed()) {
      auto remote = open_remote_store(args->url);
      std::vector<ModelMeta> metas = remote->list();
      if (!args->name.empty()) {
        ModelRef only = parse_model_ref(args->name, "store ls: the model name");
        if (!only.version.empty())
          throw bad_input(fmt::format("store ls: the model name: expected NAME, got '{}'", args->name));
        std::vector<ModelMeta> kept;
        for (ModelMeta& m : metas)
          if (m.name == only.name) kept.push_back(std::move(m));
        if (kept.empty()) throw store_detail::no_model(*remote, only);
        metas = std::move(kept);
      }
      std::string text = args->format == "json"  ? store_detail::index_json(metas)
                         : args->format == "csv" ? render_csv(metas)
                         : metas.empty()         ? fmt::format("no models in {}\n", remote->url())
                                                 : render_table(metas);
      std::fputs(text.c_str(), stdout);
      return 0;
    }
    // rm: CLI11 ran exactly one of the three.
    ModelRef ref = parse_model_ref(args->ref, "store rm: the model");
    if (ref.version.empty())
      throw bad_input(fmt::format("store rm: the model: expected NAME@VERSION, got '{}' (no version)", args->ref));
    auto remote = open_remote_store(args->url);
    if (!remote->remove(ref)) throw store_detail::no_model(*remote, ref);
    std::fprintf(stdout, "removed %s from %s\n", ref.str().c_str(), remote->url().c_str());
    return 0;
  };
}

}  // namespace inferprof::cli
