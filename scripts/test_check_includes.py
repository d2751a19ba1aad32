#!/usr/bin/env python3
"""Tests scripts/check_includes.py itself (ctest include-layers-catch): over a
copy of src/ and include/, the clean tree passes and each deliberate
violation below fails with its message.

Usage: test_check_includes.py build/layers.txt SOURCE_ROOT
"""
import os
import shutil
import subprocess
import sys
import tempfile

# (file, the include added, what the checker must say)
VIOLATIONS = [
    ("src/report/render/run_table.cpp", "replay/engine.hpp", "report includes \"replay/engine.hpp\" of replay"),
    ("src/report/collector.cpp", "inferprof/replay.hpp", "report includes \"inferprof/replay.hpp\" of replay"),
    ("src/report/render/simulate_table.cpp", "inferprof/simulate.hpp", "of simulate"),
    ("src/simulate/simulate.cpp", "report/render/simulate_parts.hpp", "report/render/ headers are report's own"),
    ("src/diff/diff.cpp", "inferprof/compare.hpp", "diff includes \"inferprof/compare.hpp\" of replay"),
    ("src/base/text.cpp", "inferprof/report.hpp", "base includes \"inferprof/report.hpp\" of report"),
    ("src/store/file_store.cpp", "report/saved_run.hpp", "store includes \"report/saved_run.hpp\" of report"),
    ("src/pipeline/preprocess.cpp", "report/saved_run.hpp", "pipeline includes \"report/saved_run.hpp\" of report"),
    ("src/cache/keys.cpp", "nowhere.hpp", "belongs to no module"),
    ("include/inferprof/stats.hpp", "inferprof/compare_result.hpp", "stats includes"),
    ("src/newfolder/x.cpp", "inferprof/error.hpp", "its folder is no module"),
]


def run(layers, root):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_includes.py")
    p = subprocess.run([sys.executable, script, layers, root], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def main(layers, source_root):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in ("src", "include"):
            shutil.copytree(os.path.join(source_root, d), os.path.join(tmp, d))
        rc, out = run(layers, tmp)
        if rc != 0:
            failures.append("the clean tree fails:\n" + out)
        for path, inc, expect in VIOLATIONS:
            full = os.path.join(tmp, path)
            existed = os.path.exists(full)
            if existed:
                original = open(full).read()
            else:
                os.makedirs(os.path.dirname(full), exist_ok=True)
                original = ""
            with open(full, "w") as f:
                f.write(original + f'\n#include "{inc}"\n')
            rc, out = run(layers, tmp)
            if rc == 0 or expect not in out:
                failures.append(f"{path} including \"{inc}\": expected a failure saying '{expect}', got "
                                f"exit {rc}:\n{out}")
            if existed:
                with open(full, "w") as f:
                    f.write(original)
            else:
                os.remove(full)
                os.rmdir(os.path.dirname(full))
    for f in failures:
        print("test-check-includes: " + f, file=sys.stderr)
    if not failures:
        print(f"test-check-includes: the clean tree passes; {len(VIOLATIONS)} deliberate violations each fail")
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: test_check_includes.py build/layers.txt SOURCE_ROOT")
    sys.exit(main(*sys.argv[1:]))
