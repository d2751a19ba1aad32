#!/usr/bin/env python3
"""Checks the layers at the include level (run by ctest as include-layers).

A module is a folder of src/ (src/CMakeLists.txt); build/layers.txt lists each
module and the modules it links. A source or header of module M may include
(with "quotes") only headers of M itself or of the modules M depends on,
directly or through others:
  - src/<folder>/... belongs to the module of its folder (report/render/ is
    report's, gpu/cuda/ gpu's, text/spm/ text's);
  - include/inferprof/<name>.hpp belongs to the module in PUBLIC_OWNER below
    (a header not listed there is an error: say whose it is);
  - report/render/*.hpp are the reporters' own parts: report's sources only.
The pipeline plugin (src/pipeline/, libinferprof_pipeline.so) is not a module
of the executable: it may include the modules in PIPELINE_USES.

Usage: check_includes.py build/layers.txt SOURCE_ROOT
"""
import os
import re
import sys

# Who owns each public header: the module whose folder defines what it declares.
PUBLIC_OWNER = {
    "error.hpp": "base", "printable.hpp": "base", "timing.hpp": "base", "enum_names.hpp": "base",
    "stats.hpp": "stats",
    "trace.hpp": "trace", "npy.hpp": "trace",
    "cache.hpp": "cache",
    "model_ref.hpp": "model_ref",
    "update_channel.hpp": "redis", "replica_group.hpp": "redis",
    "profile.hpp": "profile",
    "store.hpp": "store",
    "gate.hpp": "gate",
    # The result types, with their reporters' declarations: producers (replay,
    # simulate, diff) and renderers alike include them; none includes an engine.
    "report.hpp": "report", "run_result.hpp": "report", "compare_result.hpp": "report",
    "simulate_result.hpp": "report", "diff_result.hpp": "report", "replicas_result.hpp": "report",
    "sweep_result.hpp": "report",
    "pipeline.hpp": "plugin", "inspect.hpp": "plugin",
    "gpu.hpp": "gpu",
    "replay.hpp": "replay", "run_config.hpp": "replay", "compare.hpp": "replay", "replicas.hpp": "replay",
    "lifecycle.hpp": "replay",
    "simulate.hpp": "simulate",
    "sweep.hpp": "sweep",
    "merge.hpp": "merge",
    "diff.hpp": "diff",
}

# The plugin's own code links no module of the executable but resolves these
# against it (plus its own gpu, image and text).
PIPELINE_USES = {"pipeline", "base", "trace", "cache", "profile", "plugin", "gpu", "image", "text"}

# Folders whose headers only their own module may include.
PRIVATE_FOLDERS = {"report/render": "report"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_graph(layers_file):
    deps = {}
    for line in open(layers_file):
        parts = line.split()
        if parts:
            name = parts[0].removeprefix("inferprof_")
            deps[name] = {d.removeprefix("inferprof_") for d in parts[2:]} - {name}
    closure = {}

    def reach(m):
        if m not in closure:
            closure[m] = set()
            for d in deps.get(m, ()):
                closure[m] |= {d} | reach(d)
        return closure[m]

    return {m: {m} | reach(m) for m in deps}


def module_of(rel, modules):
    """The module a path under the source root belongs to, or None."""
    parts = rel.split("/")
    if parts[0] == "include" and len(parts) == 3 and parts[1] == "inferprof":
        return PUBLIC_OWNER.get(parts[2], "?")
    if parts[0] == "src" and len(parts) >= 3:
        folder = parts[1]
        if folder == "pipeline" or folder in modules:
            return folder
        return "?"
    return None


def check(layers_file, root):
    allowed = read_graph(layers_file)
    allowed["pipeline"] = PIPELINE_USES
    modules = set(allowed)
    errors = []
    files = []
    for top in ("src", "include/inferprof"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for n in names:
                if n.endswith((".cpp", ".hpp")):
                    files.append(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/"))
    for rel in sorted(files):
        mine = module_of(rel, modules)
        if mine == "?":
            errors.append(f"{rel}: its folder is no module (add it to src/CMakeLists.txt, or to PUBLIC_OWNER "
                          "in scripts/check_includes.py for a public header)")
            continue
        text = open(os.path.join(root, rel), encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            line = text.count("\n", 0, m.start()) + 1
            if inc.startswith("inferprof/"):
                target = "include/" + inc
            elif os.path.exists(os.path.join(root, "src", inc)):
                target = "src/" + inc
            elif os.path.exists(os.path.join(os.path.dirname(os.path.join(root, rel)), inc)):
                continue  # beside the file: its own module
            else:
                target = "src/" + inc
            owner = module_of(target, modules)
            if owner in (None, "?"):
                errors.append(f"{rel}:{line}: includes \"{inc}\", which belongs to no module")
                continue
            for folder, only in PRIVATE_FOLDERS.items():
                if target.startswith(f"src/{folder}/") and mine != only:
                    errors.append(f"{rel}:{line}: includes \"{inc}\": {folder}/ headers are {only}'s own")
            if owner not in allowed[mine]:
                errors.append(f"{rel}:{line}: {mine} includes \"{inc}\" of {owner}, which {mine} does not "
                              f"depend on (it may include: {' '.join(sorted(allowed[mine]))})")
    return len(files), errors


def main(layers_file, root):
    count, errors = check(layers_file, root)
    for e in errors:
        print("check-includes: " + e, file=sys.stderr)
    if not errors:
        print(f"check-includes: {count} files, every include within its module's dependencies")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: check_includes.py build/layers.txt SOURCE_ROOT")
    sys.exit(main(*sys.argv[1:]))
