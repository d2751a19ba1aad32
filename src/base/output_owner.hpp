#pragma once
// The one owner of what inferprof writes and removes on disk.
//
// inferprof never deletes or overwrites a file it did not create in this
// process. Every command goes through this module to:
// - claim an output folder (create it, recorded as ours, or accept an existing
//   one) and name the entries it writes there: a name taken from a model, a
//   profile or a key is escaped into one plain path component (safe_name), and
//   a child folder that exists as anything but a real folder is refused;
// - record each file and folder it creates (a file renamed over an existing
//   one replaced it and is not recorded), with its device and inode, so
//   that on failure or interrupt it removes those and only those, newest
//   first, a folder only when empty (rmdir), never recursively and never by a
//   name pattern;
// - refuse, before any work, two outputs that are one folder or one inside the
//   other, and an output that is one of the inputs or lies inside one.
//
// The registry is process-wide (the pipeline plugin shares the executable's),
// guarded by a mutex: replay workers write report files concurrently.
// abandon_all() is what a fatal signal or a crash runs (lifecycle.cpp).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace inferprof::output {

// `name` as one path component that is neither empty, "." nor "..", holds no
// '/' and no control character: '/' and control characters become '_', a name
// that is empty or all dots gets a leading '_'; at most 200 bytes.
std::string safe_name(std::string_view name);

// Claims `dir` as an output folder: creates it (and its missing parents, all
// recorded as this process's) or accepts an existing folder, then proves it
// writable with a probe file. Throws Error(bad_input) naming the folder.
void claim_dir(const std::string& dir);

// mkdir -p, each folder it makes recorded as this process's: 0 or an errno
// (ENOTDIR where a part of the path is a file).
int make_dirs(const std::string& dir) noexcept;

// `parent`/`name` for a folder of outputs inside a claimed one: `name` must be
// safe (safe_name); an entry already there must be a real folder (not a
// symbolic link, which could lead outside `parent`). Claims it. Returns the path.
std::string claim_child_dir(const std::string& parent, const std::string& name);

// Records that this process just created the file or folder at `path`.
void created(const std::string& path) noexcept;
// `from` (and everything recorded under it) was renamed to `to`.
void moved(const std::string& from, const std::string& to) noexcept;
// Whether this process created what is at `path` now (same device and inode).
bool created_here(const std::string& path);

// Removes what this process created at or under `path`, newest first: a
// file only if its inode is still the one created, a folder only if empty.
// Anything else there stays. Returns how many entries were removed.
std::size_t remove_created(const std::string& path) noexcept;

// What an earlier run of inferprof listed as its own in `dir` (a dump's
// keys.csv): each named folder's named files, regular files only, then the
// folder, which must then be empty. Throws Error(runtime) naming what could
// not be removed; check first with listed_only (below).
struct Listed {
  std::string folder;              // a plain name inside `dir`
  std::vector<std::string> files;  // plain names inside it
};
void remove_listed(const std::string& dir, const std::vector<Listed>& listed);
// Empty when `dir` holds nothing but `keep` (plain names of files), the
// `listed` folders with their files and `ours` (a folder this process
// created); else the first entry that is none of them.
std::string unlisted_entry(const std::string& dir, const std::vector<std::string>& keep,
                           const std::vector<Listed>& listed, const std::string& ours = "");

// A temporary file this process is writing (report::TempFile registers each):
// abandon_all removes them. forget_temp when renamed into place or removed.
void track_temp(const std::string& path) noexcept;
void forget_temp(const std::string& path) noexcept;
// Removes a temporary file this process created (`at`: its name relative to
// `dir_fd`, or its path with AT_FDCWD; `path` as tracked) and forgets it.
void discard_temp(int dir_fd, const std::string& at, const std::string& path) noexcept;

// A folder this process made for itself alone (mkdtemp, mode 0700; its
// subprocesses write in it): remove_private removes its whole tree, after
// checking that `path` is still the folder made (a swapped-in link is not
// followed). abandon_all removes the ones still registered.
void track_private(const std::string& path) noexcept;
void remove_private(const std::string& path) noexcept;

// A fatal signal or a crash: every temporary file, every private folder and
// everything created (a command cut short leaves no partial report). Safe to
// call more than once.
void abandon_all() noexcept;

// Outputs and inputs as the user named them, for check_distinct.
struct NamedPath {
  std::string what;  // "--out", "--dump-inputs", "input"
  std::string path;
};
// Throws Error(bad_input) before any work when two outputs are the same folder
// (by device and inode, not text) or one lies inside the other, or an output
// is one of the inputs or lies inside one (an output holding an input is fine:
// `run m.pt --out .`). `same_ok`: pairs of output
// labels that may name one folder (--dump-inputs and --dump-outputs share).
void check_distinct(const std::vector<NamedPath>& outputs, const std::vector<NamedPath>& inputs = {},
                    const std::vector<std::pair<std::string, std::string>>& same_ok = {});

// For tests: forgets every record (removes nothing).
void reset_for_tests() noexcept;

}  // namespace inferprof::output
