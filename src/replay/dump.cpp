#include "replay/dump.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <system_error>
#include <unordered_set>
#include <vector>

#include "base/atomic_file.hpp"
#include "base/csv_io.hpp"
#include "base/output_owner.hpp"
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
// put a folder or link at first), recorded as this process's.
std::string make_staging(const std::string& dir) {
  std::string path = report::join_path(dir, fmt::format(".dump.tmp.{}.XXXXXX", ::getpid()));
  if (::mkdtemp(path.data()) == nullptr) throw report::write_error(path, errno);
  output::created(path);
  return path;
}

bool six_digits(const std::string& name) {
  return name.size() == 6 && name.find_first_not_of("0123456789") == std::string::npos;
}

// What an earlier dump in `dir` wrote, as its keys.csv names it: each NNNNNN
// folder and the files in it. Nothing (no keys.csv) for a new or empty folder.
// Throws Error(bad_input) when `dir` holds anything keys.csv does not account
// for: a dump replaces only what an earlier dump wrote.
std::vector<output::Listed> earlier_dump(const std::string& dir, const std::string& flag,
                                         const std::string& staging = "") {
  std::vector<output::Listed> listed;
  const std::string index = report::join_path(dir, "keys.csv");
  struct stat st {};
  if (::lstat(index.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
    std::ifstream in(index, std::ios::binary);
    report::CsvReader csv(in, index);
    std::vector<std::string> fields;
    const bool header = csv.next(fields);
    const int folder_col = header ? report::CsvReader::column(fields, "folder") : -1;
    const int files_col = header ? report::CsvReader::column(fields, "files") : -1;
    if (folder_col < 0 || files_col < 0)
      throw bad_input(
          fmt::format("{} '{}': its keys.csv is not one a dump wrote (no folder and files columns): "
                      "give an empty or new folder",
                      flag, printable(dir)));
    while (csv.next(fields)) {
      if (report::CsvReader::blank(fields) ||
          fields.size() <= static_cast<std::size_t>(std::max(folder_col, files_col)))
        continue;
      output::Listed l{fields[static_cast<std::size_t>(folder_col)], {}};
      if (!six_digits(l.folder)) continue;  // names no folder a dump writes: accounts for nothing
      std::istringstream files(fields[static_cast<std::size_t>(files_col)]);
      for (std::string f; files >> f;)
        if (f == output::safe_name(f) && f.size() > 4 && f.compare(f.size() - 4, 4, ".npy") == 0) l.files.push_back(f);
      listed.push_back(std::move(l));
    }
  }
  const std::string stray = output::unlisted_entry(dir, {"keys.csv"}, listed, staging);
  if (!stray.empty())
    throw bad_input(
        fmt::format("{} '{}' holds '{}', which no earlier dump wrote (its keys.csv does not name it): "
                    "give an empty or new folder",
                    flag, printable(dir), printable(stray)));
  return listed;
}

// One folder of a dump, built under a staging folder and moved into DIR at the end.
class Dump {
 public:
  Dump(std::string dir, std::string flag) : dir_(std::move(dir)), flag_(std::move(flag)), staging_(make_staging(dir_)) {
    fmt::format_to(std::back_inserter(index_), "folder,key,request_id,line,input,files\n");
  }
  // What this process wrote there and did not move into DIR (a fatal signal: output::abandon_all).
  ~Dump() { output::remove_created(staging_); }
  Dump(const Dump&) = delete;
  Dump& operator=(const Dump&) = delete;

  // Folder `n` for `request`: each set's tensors (an encoded tensor set) as PREFIX[.NAME].npy.
  void add(std::size_t n, const TraceRequest& request,
           std::initializer_list<std::pair<std::string_view, const Blob*>> sets) {
    const std::string folder = fmt::format("{:06}", n);
    const std::string path = report::join_path(staging_, folder);
    if (::mkdir(path.c_str(), 0777) != 0) throw report::write_error(path, errno);
    output::created(path);
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

  // keys.csv, then every folder moved in, in place of an earlier dump's: only
  // what its keys.csv names is removed (checked again: the folder may have
  // changed since check_dump_dirs).
  void commit() {
    write_file(report::join_path(staging_, "keys.csv"), {}, std::string_view(index_.data(), index_.size()));
    output::remove_listed(dir_, earlier_dump(dir_, flag_, report::base_name(staging_)));
    for (const auto& entry : fs::directory_iterator(staging_)) {
      const std::string from = entry.path().string();
      const std::string to = report::join_path(dir_, entry.path().filename().string());
      // keys.csv replaces the earlier one; a folder's name was freed above (rename fails on a non-empty one).
      if (::rename(from.c_str(), to.c_str()) != 0) throw report::write_error(to, errno);
      output::moved(from, to);
    }
  }

 private:
  std::string dir_, flag_, staging_;
  fmt::memory_buffer index_;
};

// The dump folders as one folder each: --dump-inputs and --dump-outputs may be one (side by side).
bool one_folder(const OutputOptions& output) {
  if (output.dump_inputs.empty() || output.dump_outputs.empty()) return false;
  struct stat a {
  }, b{};
  if (::stat(output.dump_inputs.c_str(), &a) == 0 && ::stat(output.dump_outputs.c_str(), &b) == 0)
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  return fs::path(output.dump_inputs).lexically_normal() == fs::path(output.dump_outputs).lexically_normal();
}

}  // namespace

void check_outputs(const OutputOptions& output, const std::string& out_dir) {
  output::check_distinct(
      {{"--out", out_dir}, {"--dump-inputs", output.dump_inputs}, {"--dump-outputs", output.dump_outputs}}, {},
      {{"--dump-inputs", "--dump-outputs"}});
}

void check_dump_dirs(const OutputOptions& output) {
  for (const auto& [dir, flag] :
       {std::pair{&output.dump_inputs, "--dump-inputs"}, std::pair{&output.dump_outputs, "--dump-outputs"}}) {
    if (dir->empty()) continue;
    output::claim_dir(*dir);
    earlier_dump(*dir, flag);
  }
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
  if (!inputs_dir.empty()) inputs.emplace(inputs_dir, "--dump-inputs");
  // One folder for both: inputs and outputs side by side.
  const bool same = one_folder(config.output);
  if (!outputs_dir.empty() && !same) outputs.emplace(outputs_dir, "--dump-outputs");
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
