#!/usr/bin/env bash
# Fills the git-ignored third_party/ with the sources of the libraries
# inferprof needs that a bare machine (a GPU box with only pip torch and a
# CUDA toolkit) lacks, for a build with -DINFERPROF_VENDORED_DEPS=ON:
#   header-only: fmt (FMT_HEADER_ONLY), toml++ (TOML_HEADER_ONLY), CLI11,
#                xxhash (XXH_INLINE_ALL), doctest (+ its CMake test discovery)
#   compiled by CMake: simdjson (single-file amalgamation), hiredis, LMDB
# Headers come from the installed Debian -dev packages (scripts/install-deps.sh);
# the C/C++ sources of simdjson, hiredis and LMDB from Debian's source packages
# (apt-get source, with a private deb-src list: the system's apt config is not
# touched). Same versions as the Debian build. Run on the Debian build machine.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/third_party
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for f in /usr/include/fmt/format.h /usr/include/CLI/CLI.hpp /usr/include/toml++/toml.h /usr/include/xxhash.h \
         /usr/include/doctest/doctest.h /usr/lib/cmake/doctest/doctest.cmake; do
  [[ -e $f ]] || { echo "vendor-deps: $f missing; run scripts/install-deps.sh first" >&2; exit 2; }
done

echo "vendor-deps: fetching simdjson, hiredis, lmdb source packages"
mkdir -p "$work/lists/partial"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" \
  >"$work/sources.list"
apt_opts=(-o "Dir::Etc::SourceList=$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$work/lists" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" -qq update
versions=()
for pkg in simdjson hiredis lmdb; do
  v=$(dpkg-query -W -f='${source:Version}' "lib${pkg}-dev" 2>/dev/null || true)
  [[ $pkg == lmdb ]] && v=$(dpkg-query -W -f='${source:Version}' liblmdb-dev)
  versions+=("$pkg=${v}")
done
(cd "$work" && apt-get "${apt_opts[@]}" -qq source --download-only "${versions[@]}")

rm -rf "$out"
mkdir -p "$out/include" "$out/src" "$out/cmake"
cp -r /usr/include/fmt /usr/include/CLI /usr/include/toml++ /usr/include/doctest "$out/include/"
cp /usr/include/xxhash.h "$out/include/"
cp /usr/lib/cmake/doctest/doctest.cmake /usr/lib/cmake/doctest/doctestAddTests.cmake "$out/cmake/"

tar -xzf "$work"/simdjson_*.orig.tar.gz -C "$work"
cp "$work"/simdjson-*/singleheader/simdjson.h "$out/include/"
cp "$work"/simdjson-*/singleheader/simdjson.cpp "$out/src/"

tar -xzf "$work"/hiredis_*.orig.tar.gz -C "$work"
mkdir -p "$out/include/hiredis" "$out/src/hiredis"
cp "$work"/hiredis-*/*.h "$out/include/hiredis/"
for c in hiredis net read sds alloc async dict; do
  [[ -e $(echo "$work"/hiredis-*/$c.c) ]] && cp "$work"/hiredis-*/$c.c "$out/src/hiredis/"
done
cp "$work"/hiredis-*/*.h "$out/src/hiredis/"

tar -xzf "$work"/lmdb_*.orig.tar.gz -C "$work"
mkdir -p "$out/src/lmdb"
cp "$work"/lmdb-*/libraries/liblmdb/{mdb.c,midl.c,midl.h,lmdb.h} "$out/src/lmdb/"
cp "$work"/lmdb-*/libraries/liblmdb/lmdb.h "$out/include/"

{
  echo "Vendored by scripts/vendor-deps.sh on $(date -u +%FT%TZ) from Debian 12 packages:"
  for p in libfmt-dev libcli11-dev libtomlplusplus-dev libxxhash-dev doctest-dev; do
    echo "  $p $(dpkg-query -W -f='${Version}' "$p")"
  done
  printf '  source %s\n' "${versions[@]}"
} >"$out/VERSIONS.txt"
du -sh "$out" | sed 's/^/vendor-deps: third_party is /'
