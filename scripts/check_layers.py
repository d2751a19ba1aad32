#!/usr/bin/env python3
"""Checks the layers the build declares (run by ctest as build-layers).

build/layers.txt (written by src/CMakeLists.txt) lists each module's archive
and the modules it links. This script fails when
  - the declared graph has a cycle;
  - a module uses a symbol defined by another module it does not depend on
    (directly or through others): an undeclared layer crossing;
  - the pipeline plugin needs an inferprof symbol the executable does not
    export (it would fail to load);
  - the executable needs libtorch, CUDA, CUPTI or libcurl at start-up.
"""
import subprocess
import sys


# Functions both sides define on purpose: the executable's forwarding facade
# (pipeline/host.cpp) and the plugin's implementation, local to it.
PLUGIN_OWN_NAMES = ("model_info", "configure_threads", "libtorch_version", "generate_model", "inspect_model")


def symbols(path):
    out = subprocess.run(["nm", "-P", "-g", path], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2 or line.endswith(":"):
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in "TDBRVWiu":
            defined.add(name)
    return defined, undefined


def main(layers_file, exe, plugin):
    modules = {}
    for line in open(layers_file):
        parts = line.split()
        if parts:
            modules[parts[0]] = (parts[1], [d for d in parts[2:] if d != parts[0]])
    errors = []

    # Cycles (depth-first search).
    state = {}
    def visit(m, stack):
        if state.get(m) == 1:
            errors.append("cycle: " + " -> ".join(stack[stack.index(m):] + [m]))
            return
        if state.get(m) == 2:
            return
        state[m] = 1
        for d in modules[m][1]:
            if d in modules:
                visit(d, stack + [m])
        state[m] = 2
    for m in modules:
        visit(m, [])

    closure = {}
    def deps(m):
        if m not in closure:
            closure[m] = set()
            for d in modules[m][1]:
                if d in modules:
                    closure[m] |= {d} | deps(d)
        return closure[m]

    syms = {m: symbols(a) for m, (a, _) in modules.items()}
    owner = {}
    for m, (defined, _) in syms.items():
        for s in defined:
            owner.setdefault(s, set()).add(m)
    for m, (defined, undefined) in syms.items():
        allowed = {m} | deps(m)
        crossings = {}
        for s in undefined - defined:
            where = owner.get(s)
            if where and not (where & allowed):
                crossings.setdefault(sorted(where)[0], []).append(s)
        for other, names in sorted(crossings.items()):
            demangled = subprocess.run(["c++filt"], input=names[0], capture_output=True, text=True).stdout.strip()
            errors.append(f"{m} uses {other} without declaring it ({len(names)} symbols, e.g. {demangled})")

    # The plugin resolves inferprof symbols against the executable.
    exe_dynamic = subprocess.run(["nm", "-D", "--defined-only", exe], capture_output=True, text=True,
                                 check=True).stdout.split()
    plugin_undefined = subprocess.run(["nm", "-D", "--undefined-only", plugin], capture_output=True, text=True,
                                      check=True).stdout.split()
    exported = set(exe_dynamic)
    missing = [s for s in plugin_undefined if "inferprof" in s and s not in exported and s != "U"]
    if missing:
        errors.append(f"the executable does not export {len(missing)} symbols the plugin needs, e.g. "
                      + subprocess.run(["c++filt"], input=missing[0], capture_output=True, text=True).stdout.strip())

    # Nor may it hold its own copy of them: process-wide state (the span-name
    # table) must exist once. Strong definitions only; inline functions may repeat.
    host = {"inferprof_base", "inferprof_trace", "inferprof_cache", "inferprof_profile", "inferprof_plugin"}
    host_defined = set()
    for m in host & modules.keys():
        out = subprocess.run(["nm", "-P", "-g", "--defined-only", modules[m][0]], capture_output=True, text=True,
                             check=True).stdout
        host_defined |= {p[0] for p in (l.split() for l in out.splitlines()) if len(p) > 1 and p[1] in "TDBR"}
    out = subprocess.run(["nm", "-P", "--defined-only", plugin], capture_output=True, text=True, check=True).stdout
    copies = sorted({p[0] for p in (l.split() for l in out.splitlines()) if len(p) > 1 and p[1] in "TtDdBbRr"}
                    & host_defined - {"inferprof_pipeline_api"})
    # The plugin's own Pipeline (local) has the executable facade's names by design.
    copies = [s for s in copies if "Pipeline" not in s and not any(n in s for n in PLUGIN_OWN_NAMES)]
    if copies:
        errors.append(f"the plugin holds its own copy of {len(copies)} executable symbols, e.g. "
                      + subprocess.run(["c++filt"], input=copies[0], capture_output=True, text=True).stdout.strip())

    needed = subprocess.run(["readelf", "-d", exe], capture_output=True, text=True, check=True).stdout
    for lib in ("libtorch", "libc10", "libcupti", "libcudart", "libcurl"):
        if lib in needed:
            errors.append(f"{exe} needs {lib} at start-up")

    for e in errors:
        print("check-layers: " + e, file=sys.stderr)
    if not errors:
        print(f"check-layers: {len(modules)} modules, no cycles, no undeclared uses; plugin symbols exported; "
              "no libtorch or libcurl at start-up")
    return 1 if errors else 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: check_layers.py build/layers.txt build/inferprof build/libinferprof_pipeline.so")
    sys.exit(main(*sys.argv[1:]))
