#include "replay/dump.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/text.hpp"
#include "inferprof/cache.hpp"
#include "inferprof/error.hpp"
#include "inferprof/lifecycle.hpp"
#include "inferprof/npy.hpp"
#include "inferprof/printable.hpp"

namespace fs = std::filesystem;

namespace inferprof::detail {

namespace {

// A tensor's name as part of a file name: argument names and dict keys may
// hold anything.
std::string file_safe(std::string_view name) {
  std::string out;
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-') ? c : '_';
  return out.substr(0, 100);
}

// The files a request's inputs were read from (image, text_file, npy), space-separated.
std::string input_files(const TraceRequest& request) {
  std::string out = request.input.file;
  for (const InputSpec& spec : request.inputs)
    if (!spec.file.empty()) out += (out.empty() ? "" : " ") + spec.file;
  return out;
}

void write_file(const std::string& path, std::string_view header, std::string_view data) {
  report::TempFile f;
  f.open(path);
  f.write(header);
  f.write(data);
  f.rename_into_place();
}

// A new folder DIR/.dump.tmp.PID.XXXXXX (mkdtemp: a name nobody could have
// put a folder or link at first).
std::string make_staging(const std::string& dir) {
  std::string path = report::join_path(dir, fmt::format(".dump.tmp.{}.XXXXXX", ::getpid()));
  if (::mkdtemp(path.data()) == nullptr) throw report::write_error(path, errno);
  return path;
}

// One folder of a dump, built under a staging folder and moved into DIR at the end.
class Dump {
 public:
  explicit Dump(std::string dir)
      : dir_(std::move(dir)), staging_(make_staging(dir_)), on_signal_([s = staging_] {
          std::error_code ec;
          fs::remove_all(s, ec);
        }) {
    fmt::format_to(std::back_inserter(index_), "folder,key,request_id,line,input,files\n");
  }
  ~Dump() {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  Dump(const Dump&) = delete;
  Dump& operator=(const Dump&) = delete;

  // Folder `n` for `request`: each set's tensors (an encoded tensor set) as PREFIX[.NAME].npy.
  void add(std::size_t n, const TraceRequest& request,
           std::initializer_list<std::pair<std::string_view, const Blob*>> sets) {
    const std::string folder = fmt::format("{:06}", n);
    const std::string path = report::join_path(staging_, folder);
    std::error_code ec;
    fs::create_directory(path, ec);
    if (ec) throw report::write_error(path, ec.value());
    std::string files;
    for (const auto& [prefix, set] : sets) {
      const std::optional<TensorSet> tensors = *set ? decode_tensors(**set) : std::nullopt;
      if (!tensors) {
        files += fmt::format("{}({}: not tensors .npy can hold)", files.empty() ? "" : " ", prefix);
        continue;
      }
      for (std::size_t i = 0; i < tensors->tensors.size(); ++i) {
        const TensorView& t = tensors->tensors[i];
        const std::string& name = i < tensors->names.size() ? tensors->names[i] : std::string();
        std::string file(prefix);
        if (!name.empty())
          file += "." + file_safe(name);
        else if (tensors->kind != TensorSet::Kind::single)
          file += fmt::format(".{}", i);
        file += ".npy";
        write_file(report::join_path(path, file), npy_header(t.dtype, t.shape), t.bytes);
        files += (files.empty() ? "" : " ") + file;
      }
    }
    fmt::format_to(std::back_inserter(index_), "{},", folder);
    report::append_csv_field(index_, request.key);
    fmt::format_to(std::back_inserter(index_), ",{},{},", request.id, request.line);
    report::append_csv_field(index_, input_files(request));
    index_.push_back(',');
    report::append_csv_field(index_, files);
    index_.push_back('\n');
  }

  // keys.csv, then every folder moved in, in place of an earlier dump's
  // (all of its NNNNNN folders: a dump of fewer keys leaves none of the old ones).
  void commit() {
    write_file(report::join_path(staging_, "keys.csv"), {}, std::string_view(index_.data(), index_.size()));
    std::vector<fs::path> earlier;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name.size() == 6 && name.find_first_not_of("0123456789") == std::string::npos)
        earlier.push_back(entry.path());
    }
    for (const fs::path& old : earlier) {
      std::error_code ec;
      fs::remove_all(old, ec);
    }
    for (const auto& entry : fs::directory_iterator(staging_)) {
      const fs::path target = fs::path(dir_) / entry.path().filename();
      std::error_code ec;
      fs::remove_all(target, ec);
      fs::rename(entry.path(), target, ec);
      if (ec) throw report::write_error(target.string(), ec.value());
    }
  }

 private:
  std::string dir_, staging_;
  lifecycle::Cleanup on_signal_;
  fmt::memory_buffer index_;
};

}  // namespace

void check_dump_dirs(const OutputOptions& output) {
  for (const std::string* dir : {&output.dump_inputs, &output.dump_outputs})
    if (!dir->empty()) ensure_output_dir(*dir);
}

RunConfig without_dumps(RunConfig config) {
  config.output.dump_inputs.clear();
  config.output.dump_outputs.clear();
  return config;
}

void dump_model_io(const RunConfig& config, Pipeline& pipeline) {
  const std::string &inputs_dir = config.output.dump_inputs, &outputs_dir = config.output.dump_outputs;
  if ((inputs_dir.empty() && outputs_dir.empty()) || lifecycle::interrupted()) return;
  std::optional<Dump> inputs, outputs;
  if (!inputs_dir.empty()) inputs.emplace(inputs_dir);
  // One folder for both: inputs and outputs side by side.
  const bool same =
      !inputs_dir.empty() && fs::path(inputs_dir).lexically_normal() == fs::path(outputs_dir).lexically_normal();
  if (!outputs_dir.empty() && !same) outputs.emplace(outputs_dir);
  TraceReader reader(config.replay.trace_path,
                     TraceReader::Options{config.replay.skip_invalid, 1 << 20, config.replay.csv});
  std::unordered_set<std::string> seen;
  std::uint64_t requests = 0;
  for (TraceRecord rec; reader.next(rec);) {
    if (rec.kind != TraceRecord::Kind::request) continue;
    if (config.replay.limit > 0 && requests >= config.replay.limit) break;
    ++requests;
    if (seen.count(rec.request.key)) continue;
    // Interrupted: no dump (the staging folder goes with ~Dump), but the reports of what was measured stay.
    if (lifecycle::interrupted()) return;
    Pipeline::ModelIo io;
    try {
      io = pipeline.model_io(rec.request, !outputs_dir.empty());
    } catch (const Error& e) {
      if (config.replay.skip_invalid && e.code() == ExitCode::bad_input) continue;  // skipped in the replay too
      throw;
    }
    seen.insert(rec.request.key);
    if (same) {
      inputs->add(seen.size(), rec.request, {{"input", &io.inputs}, {"output", &io.outputs}});
      continue;
    }
    if (inputs) inputs->add(seen.size(), rec.request, {{"input", &io.inputs}});
    if (outputs) outputs->add(seen.size(), rec.request, {{"output", &io.outputs}});
  }
  if (inputs) inputs->commit();
  if (outputs) outputs->commit();
}

}  // namespace inferprof::detail
