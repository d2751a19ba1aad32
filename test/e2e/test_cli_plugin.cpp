// End-to-end: libtorch only for commands that run a model. The executable
// loads libinferprof_pipeline.so on first use; a copy of the binary with no
// plugin beside it still runs every other command, and a model command fails
// with one line naming where the plugin was looked for.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli_harness.hpp"
#include "sanitized.hpp"
#include "spm_model.hpp"

using namespace inferprof::testing;
namespace fs = std::filesystem;

namespace {

// Runs `binary` (not the built one) with `args`.
CliResult run_binary(const std::string& binary, const std::vector<std::string>& args, const std::string& env = "") {
  static TempDir io;
  static int counter = 0;
  const std::string out = io.file(fmt::format("o{}", counter)), err = io.file(fmt::format("e{}", counter));
  ++counter;
  std::string cmd = env + " " + shell_quote(binary);
  for (const auto& a : args)
    cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote(out) + " 2>" + shell_quote(err) + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

}  // namespace

TEST_SUITE("plugin") {
  TEST_CASE("plugin: commands that run no model never load libtorch (nor libcurl), gen-model loads it") {
    TempDir dir;
    const std::string trace = dir.file("t.jsonl");
    REQUIRE(run_cli({"gen-trace", "--requests", "200", "--keys", "20", "-o", trace}).code == 0);
    // The loader's own trace of what it maps (glibc): no pipeline, no libtorch.
    for (const std::vector<std::string>& args : {std::vector<std::string>{"--version"},
                                                 {"--help"},
                                                 {"simulate", "--trace", trace, "--tier", "l1=lru:10"},
                                                 {"convert", trace, "-o", dir.file("t.iptrace")}}) {
      auto r = run_cli(args, "LD_DEBUG=files");
      CAPTURE(args[0]);
      CHECK(r.code == 0);
      CHECK(r.err.find("file=") != std::string::npos);  // LD_DEBUG works here: the check below can fail
      CHECK(r.err.find("libinferprof_pipeline") == std::string::npos);
      CHECK(r.err.find("libtorch") == std::string::npos);
      CHECK(r.err.find("libcurl") == std::string::npos);  // loaded only for an http(s) model store
    }
    // gen-model needs the model pipeline: it is loaded.
    auto g = run_cli({"gen-model", "--arch", "mlp", "-o", dir.file("m.pt")}, "LD_DEBUG=files");
    CHECK(g.code == 0);
    CHECK(g.err.find("libinferprof_pipeline") != std::string::npos);
    CHECK(g.err.find("libtorch") != std::string::npos);
  }

  TEST_CASE("plugin: missing, the other commands work and model commands fail with one line naming it") {
    TempDir dir;
    // The executable finds itself through /proc/self/exe: a resolved path.
    const fs::path root = fs::canonical(dir.path());
    const std::string bin = (root / "bin").string();
    const std::string installed = (root / "bin" / INFERPROF_PLUGIN_RELATIVE_DIR).lexically_normal().string();
    fs::create_directories(bin);
    const std::string copy = bin + "/inferprof";
    fs::copy_file(INFERPROF_BINARY, copy);
    const std::string trace = dir.file("t.jsonl");
    const std::string model = dir.file("m.pt");
    make_model_and_trace(model, trace, {"--requests", "50", "--keys", "10"});

    CHECK(run_binary(copy, {"--version"}).code == 0);
    CHECK(run_binary(copy, {"gen-trace", "--requests", "10", "-o", dir.file("u.jsonl")}).code == 0);
    CHECK(run_binary(copy, {"convert", trace, "-o", dir.file("t.iptrace")}).code == 0);
    CHECK(run_binary(copy, {"simulate", "--trace", dir.file("t.iptrace"), "--tier", "l1=lru:10"}).code == 0);

    const std::string expected = "inferprof: error: the model pipeline '" + bin + "/libinferprof_pipeline.so" +
                                 "' is missing (nor is it in '" + installed +
                                 "'); it is built and installed with inferprof, which needs it to run a model\n";
    auto r = run_binary(copy, {"run", model, "--trace", trace, "--out", dir.file("out")});
    CHECK(r.code == 3);
    CHECK(r.err == expected);
    CHECK(dir_is_empty_or_missing(dir.file("out")));
    auto g = run_binary(copy, {"gen-model", "-o", dir.file("m2.pt")});
    CHECK(g.code == 3);
    CHECK(g.err == expected);
    CHECK_FALSE(fs::exists(dir.file("m2.pt")));

    // Where `install` puts it (relative to bin/), it is found.
    fs::create_directories(installed);
    fs::create_symlink(INFERPROF_PLUGIN, installed + "/libinferprof_pipeline.so");
    auto ok = run_binary(copy, {"gen-model", "-o", dir.file("m3.pt")});
    CHECK(ok.code == 0);
    CHECK(fs::exists(dir.file("m3.pt")));

    // A file that is not a loadable library: named, with the loader's reason.
    fs::remove(installed + "/libinferprof_pipeline.so");
    { std::ofstream(bin + "/libinferprof_pipeline.so") << "not a library"; }
    auto bad = run_binary(copy, {"gen-model", "-o", dir.file("m4.pt")});
    CHECK(bad.code == 3);
    CHECK(bad.err.rfind("inferprof: error: cannot load the model pipeline '" + bin + "/libinferprof_pipeline.so': ",
                        0) == 0);
    CHECK(count_lines(bad.err) == 1);
  }

  // Issue 24 I: a library in the working directory (an empty LD_LIBRARY_PATH entry is that folder) is never
  // loaded as part of inferprof.
  TEST_CASE("plugin: without /proc/self/exe, no pipeline is loaded from the working directory") {
    if (std::system("unshare -rm true >/dev/null 2>&1") != 0) {
      MESSAGE("no user and mount namespaces here (unshare -rm): skipped");
      return;
    }
    TempDir dir;
    const std::string cwd = dir.file("cwd");
    fs::create_directories(cwd);
    fs::create_symlink(INFERPROF_PLUGIN, cwd + "/libinferprof_pipeline.so");  // planted
    // A /proc of its own with nothing in it: /proc/self/exe cannot be read.
    const std::string cmd = "cd " + shell_quote(cwd) +
                            " && exec unshare -rm sh -c 'mount -t tmpfs none /proc && exec " +
                            shell_quote(INFERPROF_BINARY) + " gen-model -o m.pt'";
    auto r = run_binary("sh", {"-c", cmd});
    CHECK(r.code == 3);
    CHECK_MESSAGE(r.err.rfind("inferprof: error: cannot find this executable's folder", 0) == 0, r.err);
    CHECK(count_lines(r.err) == 1);
    CHECK_FALSE(fs::exists(cwd + "/m.pt"));
  }

  TEST_CASE("plugin: the SentencePiece library only from the installation's folders, never by bare name" *
            doctest::skip(kSanitized)) {
    TempDir dir;
    const fs::path root = fs::canonical(dir.path());
    const std::string bin = (root / "bin").string();
    const std::string installed = (root / "bin" / INFERPROF_PLUGIN_RELATIVE_DIR).lexically_normal().string();
    const std::string cwd = (root / "cwd").string();
    fs::create_directories(bin);
    fs::create_directories(installed);
    fs::create_directories(cwd);
    fs::copy_file(INFERPROF_BINARY, bin + "/inferprof");
    // A copy, not a link: the library is looked for beside the plugin's real file too.
    fs::copy_file(INFERPROF_PLUGIN, installed + "/libinferprof_pipeline.so");
    const std::string shim = (fs::path(INFERPROF_PLUGIN).parent_path() / "libinferprof_spm.so").string();
    fs::copy_file(shim, cwd + "/libinferprof_spm.so");  // planted where LD_LIBRARY_PATH's empty entry points
    const std::string model = dir.file("text.pt");
    REQUIRE(run_cli({"gen-model", "--arch", "text", "-o", model}).code == 0);
    if (train_spm_model(dir, "tok").empty()) {
      MESSAGE("spm_train is not installed: skipped");
      return;
    }
    const std::string profile =
        dir.write("text.toml", "[[preprocess]]\nop = \"tokenize\"\nmodel = \"tok.model\"\nmax_length = 8\n");
    const std::string trace = dir.write("t.jsonl", "{\"input\": {\"text\": \"the model serves\"}}\n");
    const std::vector<std::string> args = {"run",   model,      "--trace", trace,          "--profile",
                                           profile, "--warmup", "0",       "--no-progress"};
    const std::string env = "cd " + shell_quote(cwd) + " && LD_LIBRARY_PATH=:";
    auto r = run_binary(bin + "/inferprof", args, env);
    CHECK(r.code == 2);
    CHECK_MESSAGE(r.err.find("cannot load libinferprof_spm.so (not in " + installed + "/libinferprof_spm.so") !=
                      std::string::npos,
                  r.err);
    CHECK(count_lines(r.err) == 1);
    // Installed beside the plugin, it is found.
    fs::copy_file(shim, installed + "/libinferprof_spm.so");
    auto ok = run_binary(bin + "/inferprof", args, env);
    CHECK_MESSAGE(ok.code == 0, ok.err);
  }

  TEST_CASE("plugin: never loaded from a folder other users can write, nor from one folder up" *
            doctest::skip(kSanitized)) {
    TempDir dir;
    const fs::path root = fs::canonical(dir.path());
    // A binary one level below a world-writable (not sticky) folder, the pipeline in its lib folder there.
    const fs::path open = root / "open";
    const std::string bin = (open / "bin").string();
    const std::string installed = (open / "bin" / INFERPROF_PLUGIN_RELATIVE_DIR).lexically_normal().string();
    fs::create_directories(bin);
    fs::create_directories(installed);
    fs::copy_file(INFERPROF_BINARY, bin + "/inferprof");
    fs::copy_file(INFERPROF_PLUGIN, installed + "/libinferprof_pipeline.so");
    fs::permissions(open, fs::perms::all);  // 0777: anyone could have put that library there
    const std::string model = dir.file("m.pt");
    auto r = run_binary(bin + "/inferprof", {"gen-model", "--arch", "mlp", "-o", model}, "");
    CHECK(r.code == 3);
    CHECK_MESSAGE(r.err.find("refusing to load the model pipeline") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find("'" + open.string() + "' is writable by other users") != std::string::npos, r.err);
    CHECK(count_lines(r.err) == 1);
    CHECK_FALSE(fs::exists(model));
    // The same layout in a folder only its owner writes: loaded.
    fs::permissions(open, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    r = run_binary(bin + "/inferprof", {"gen-model", "--arch", "mlp", "-o", model}, "");
    CHECK_MESSAGE(r.code == 0, r.err);
  }
}
