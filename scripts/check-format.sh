#!/usr/bin/env bash
# Fails (exit 1) when a tracked C++ file differs from .clang-format, naming it.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=()
while IFS= read -r f; do
  clang-format --style=file "$f" | cmp -s - "$f" || bad+=("$f")
done < <(git ls-files '*.cpp' '*.hpp' '*.h')
if ((${#bad[@]})); then
  printf 'check-format: not formatted (run clang-format -i on them): %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: all files formatted"
