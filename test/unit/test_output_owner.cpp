// The output owner (src/base/output_owner.*): what inferprof may create,
// replace and remove on disk.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/atomic_file.hpp"
#include "base/output_owner.hpp"
#include "inferprof/error.hpp"
#include "temp_dir.hpp"

namespace fs = std::filesystem;
namespace output = inferprof::output;
using inferprof::Error;
using inferprof::testing::TempDir;

namespace {

void plant(const fs::path& p, const std::string& text = "user") {
  std::ofstream(p) << text;
}

std::string read_back(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_SUITE("output owner") {
  TEST_CASE("safe_name: one plain component, whatever a model or profile is called") {
    CHECK(output::safe_name("l1+l2") == "l1+l2");
    CHECK(output::safe_name("") == "_");
    CHECK(output::safe_name(".") == "_.");
    CHECK(output::safe_name("..") == "_..");
    CHECK(output::safe_name("...") == "_...");
    CHECK(output::safe_name("../m.pt") == ".._m.pt");
    CHECK(output::safe_name("a/b") == "a_b");
    CHECK(output::safe_name("a\x1b[31mb\n") == "a_[31mb_");
    CHECK(output::safe_name(std::string(300, 'x')).size() == 200);
    CHECK(output::safe_name(".hidden") == ".hidden");
  }

  TEST_CASE("remove_created removes what this process made, newest first, and nothing a user put beside it") {
    output::reset_for_tests();
    TempDir dir;
    plant(dir.path() / "before.txt");
    const std::string out = (dir.path() / "out" / "deep").string();
    output::claim_dir(out);  // creates out/ and out/deep/, both recorded
    inferprof::write_file_atomic(out, "summary.json", "{}");
    plant(fs::path(out) / "user.txt");  // put there by someone else meanwhile
    CHECK(output::created_here(out + "/summary.json"));
    CHECK_FALSE(output::created_here(out + "/user.txt"));
    CHECK(output::remove_created(dir.str()) == 1);  // summary.json; the folders are not empty
    CHECK_FALSE(fs::exists(fs::path(out) / "summary.json"));
    CHECK(read_back(fs::path(out) / "user.txt") == "user");
    CHECK(fs::exists(dir.path() / "before.txt"));

    // Without the user's file, the folders it made go too; the folder it only accepted stays.
    output::claim_dir(out);
    inferprof::write_file_atomic(out, "summary.json", "{}");
    fs::remove(fs::path(out) / "user.txt");
    CHECK(output::remove_created(dir.str()) == 3);  // summary.json, deep/, out/
    CHECK(dir.list() == std::vector<std::string>{"before.txt"});
  }

  TEST_CASE("a file replaced by another of the same name after it was written is not ours") {
    output::reset_for_tests();
    TempDir dir;
    inferprof::write_file_atomic(dir.str(), "report.html", "ours");
    fs::remove(dir.path() / "report.html");
    plant(dir.path() / "report.html", "theirs");  // often the same inode, reused: not the same file
    CHECK(output::remove_created(dir.str()) == 0);
    CHECK(read_back(dir.path() / "report.html") == "theirs");
  }

  TEST_CASE("a file written over an existing one replaced it: a later failure does not remove it") {
    output::reset_for_tests();
    TempDir dir;
    plant(dir.path() / "index.json", "earlier");
    inferprof::write_file_atomic(dir.str(), "index.json", "new entries");
    inferprof::write_file_atomic(dir.str(), "fresh.json", "{}");
    CHECK_FALSE(output::created_here(dir.file("index.json")));
    CHECK(output::remove_created(dir.str()) == 1);  // fresh.json
    CHECK(read_back(dir.path() / "index.json") == "new entries");
    CHECK(dir.list() == std::vector<std::string>{"index.json"});
  }

  TEST_CASE("claim_child_dir: a name is one component and a link at it is refused") {
    output::reset_for_tests();
    TempDir dir, elsewhere;
    plant(elsewhere.path() / "keep.txt");
    CHECK_THROWS_AS(output::claim_child_dir(dir.str(), ".."), Error);
    CHECK_THROWS_AS(output::claim_child_dir(dir.str(), "a/b"), Error);
    fs::create_directory_symlink(elsewhere.path(), dir.path() / "l1");
    CHECK_THROWS_AS(output::claim_child_dir(dir.str(), "l1"), Error);
    CHECK(output::claim_child_dir(dir.str(), "l2") == dir.str() + "/l2");
    CHECK(fs::is_directory(dir.path() / "l2"));
    output::abandon_all();
    CHECK(dir.list() == std::vector<std::string>{"l1"});
    CHECK(fs::exists(elsewhere.path() / "keep.txt"));
  }

  TEST_CASE("check_distinct: one folder by two names, nested outputs, and an output that is an input") {
    TempDir dir;
    fs::create_directory(dir.path() / "a");
    fs::create_directory_symlink(dir.path() / "a", dir.path() / "link");
    const std::string a = dir.file("a"), link = dir.file("link");
    // One folder named twice (a trailing slash, a link): refused unless the pair may share.
    CHECK_THROWS_AS(output::check_distinct({{"--dump-inputs", a}, {"--out", a + "/"}}), Error);
    CHECK_THROWS_AS(output::check_distinct({{"--out", a}, {"--dump-outputs", link}}), Error);
    CHECK_NOTHROW(output::check_distinct({{"--dump-inputs", a}, {"--dump-outputs", link}}, {},
                                         {{"--dump-inputs", "--dump-outputs"}}));
    // Nested, also through a link and where the inner one does not exist yet.
    CHECK_THROWS_AS(output::check_distinct({{"--out", a}, {"--dump-inputs", link + "/sub"}}), Error);
    CHECK_THROWS_AS(output::check_distinct({{"--out", dir.file("new")}, {"--dump-inputs", dir.file("new/x")}}), Error);
    CHECK_NOTHROW(output::check_distinct({{"--out", dir.file("x")}, {"--dump-inputs", dir.file("xy")}}));
    // merge A B --out A, --out A/sub; an output holding an input is fine.
    CHECK_THROWS_AS(output::check_distinct({{"--out", link}}, {{"the run folder", a}}), Error);
    CHECK_THROWS_AS(output::check_distinct({{"--out", a + "/merged"}}, {{"the run folder", a}}), Error);
    CHECK_NOTHROW(output::check_distinct({{"--out", dir.str()}}, {{"the run folder", a}}));
    CHECK_NOTHROW(output::check_distinct({{"--out", ""}}, {{"the run folder", a}}));
  }

  TEST_CASE("remove_listed removes only the files an earlier run listed, and refuses a folder holding more") {
    TempDir dir;
    fs::create_directory(dir.path() / "000001");
    plant(dir.path() / "000001" / "input.npy");
    fs::create_directory(dir.path() / "000002");
    plant(dir.path() / "000002" / "input.npy");
    plant(dir.path() / "000002" / "photo.jpg");
    const std::vector<output::Listed> listed = {{"000001", {"input.npy"}}, {"000002", {"input.npy"}}};
    CHECK(output::unlisted_entry(dir.str(), {"keys.csv"}, listed) == "000002/photo.jpg");
    CHECK_THROWS_AS(output::remove_listed(dir.str(), listed), Error);
    CHECK_FALSE(fs::exists(dir.path() / "000001"));
    CHECK(read_back(dir.path() / "000002" / "photo.jpg") == "user");
  }
}
