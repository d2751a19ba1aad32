#!/usr/bin/env python3
"""Checks deploy/kubernetes/indexed-job.yaml offline (ctest deploy-manifest):
the fields docs/scale-out.md relies on, that the names it joins (the Redis
Service, the volume) agree, and that every inferprof flag it passes is one
`inferprof run --help` lists. Exits 77 (a skip) without python3-yaml.

Usage: test_deploy_manifest.py INFERPROF_BINARY MANIFEST
"""
import re
import shlex
import subprocess
import sys

try:
    import yaml
except ImportError:
    print("skip: python3-yaml is not installed")
    sys.exit(77)

binary, path = sys.argv[1], sys.argv[2]
docs = [d for d in yaml.safe_load_all(open(path)) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


for kind in ("Service", "Deployment", "PersistentVolumeClaim", "Job"):
    check(len(by_kind.get(kind, [])) == 1, f"one {kind}")
service = by_kind["Service"][0]
deployment = by_kind["Deployment"][0]
claim = by_kind["PersistentVolumeClaim"][0]
job = by_kind["Job"][0]

# Redis: the Service selects the Deployment's pods on Redis's port.
check(service["spec"]["selector"] == deployment["spec"]["template"]["metadata"]["labels"],
      "the Service selects the Redis pods")
redis_port = service["spec"]["ports"][0]["port"]
check(deployment["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == redis_port,
      "Redis listens on the Service's port")
check("ReadWriteMany" in claim["spec"]["accessModes"], "the results volume is shared (ReadWriteMany)")

# The Indexed Job: N pods at once, each with JOB_COMPLETION_INDEX, N in INFERPROF_REPLICAS.
spec = job["spec"]
check(spec["completionMode"] == "Indexed", "completionMode: Indexed (gives JOB_COMPLETION_INDEX)")
check(spec["completions"] == spec["parallelism"], "all replicas run at once (completions == parallelism)")
check(spec.get("backoffLimit") == 0, "backoffLimit 0: a failed replica is reported, not replayed later")
pod = spec["template"]["spec"]
check(pod["restartPolicy"] == "Never", "restartPolicy Never")
container = pod["containers"][0]
env = {e["name"]: e for e in container["env"]}
check(env.get("INFERPROF_REPLICAS", {}).get("value") == str(spec["completions"]),
      "INFERPROF_REPLICAS equals completions")
check(env.get("GROUP", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath", "").endswith("controller-uid']"),
      "the group is named by the Job's uid")
mount = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
volume = {v["name"]: v for v in pod["volumes"]}
check(all(volume[n]["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"] for n in mount),
      "the pods mount the shared claim")

# The command: a run that joins the group through the Service, writes under the mount.
words = shlex.split(" ".join(container["args"]))
check(words[:3] == ["exec", "inferprof", "run"], "the pod runs 'inferprof run'")
flags = {}
for i, w in enumerate(words):
    if w.startswith("--"):
        flags[w] = words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else ""
check(flags.get("--group") == "$GROUP", "--group $GROUP")
check(flags.get("--redis") == f"redis://{service['metadata']['name']}:{redis_port}", "--redis names the Service")
out, into = flags.get("--out", ""), flags.get("--merge-into", "")
check(out.endswith("replica-$JOB_COMPLETION_INDEX"), "each replica's --out is its own folder")
check(out.rsplit("/", 1)[0] == into.rsplit("/", 1)[0], "--merge-into sits beside the replicas' folders")
check(any(out.startswith(m + "/") for m in mount.values()), "--out is on the shared volume")
check("--replica" not in flags, "K/N come from the environment, not --replica")

# Every flag is one inferprof knows.
help_text = subprocess.run([binary, "run", "--help"], capture_output=True, text=True).stdout
known = set(re.findall(r"(--[a-z][a-z0-9-]*)", help_text))
for f in flags:
    check(f in known, f"'inferprof run --help' lists {f}")

for f in failures:
    print("FAIL", f)
print(f"{len(failures)} failed checks of {path}")
sys.exit(1 if failures else 0)
