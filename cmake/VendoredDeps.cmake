# INFERPROF_VENDORED_DEPS=ON: the libraries come from third_party/ (filled by
# scripts/vendor-deps.sh) instead of the system, under the same target names
# the system packages provide, so the rest of the build is unchanged. Every
# vendored piece compiles with this build's flags (torch's
# _GLIBCXX_USE_CXX11_ABI included): no ABI clash with a pip torch.
set(_tp ${PROJECT_SOURCE_DIR}/third_party)
if(NOT EXISTS ${_tp}/include/fmt/format.h OR NOT EXISTS ${_tp}/src/simdjson.cpp)
  message(FATAL_ERROR "INFERPROF_VENDORED_DEPS=ON but ${_tp} is not filled: run scripts/vendor-deps.sh "
                      "on a machine with the Debian packages and copy third_party/ along")
endif()
enable_language(C)

# A header-only library from third_party/include under a system package's target name.
function(inferprof_vendored_headers name alias)
  add_library(inferprof_vendored_${name} INTERFACE)
  target_include_directories(inferprof_vendored_${name} SYSTEM INTERFACE ${_tp}/include)
  target_compile_definitions(inferprof_vendored_${name} INTERFACE ${ARGN})
  add_library(${alias} ALIAS inferprof_vendored_${name})
endfunction()
inferprof_vendored_headers(fmt fmt::fmt FMT_HEADER_ONLY=1)
inferprof_vendored_headers(cli11 CLI11::CLI11)
inferprof_vendored_headers(toml tomlplusplus::tomlplusplus TOML_HEADER_ONLY=1)
inferprof_vendored_headers(xxhash PkgConfig::XXHASH XXH_INLINE_ALL=1)
inferprof_vendored_headers(doctest doctest::doctest)
set(doctest_DIR ${_tp}/cmake)

add_library(inferprof_vendored_simdjson STATIC ${_tp}/src/simdjson.cpp)
target_include_directories(inferprof_vendored_simdjson SYSTEM PUBLIC ${_tp}/include)
# Position-independent: the pipeline plugin (a shared library) links it too.
set_target_properties(inferprof_vendored_simdjson PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(simdjson::simdjson ALIAS inferprof_vendored_simdjson)

# hiredis: the synchronous client (async.c, which includes dict.c, is not used).
file(GLOB _hiredis_c ${_tp}/src/hiredis/hiredis.c ${_tp}/src/hiredis/net.c ${_tp}/src/hiredis/read.c
     ${_tp}/src/hiredis/sds.c ${_tp}/src/hiredis/alloc.c)
add_library(inferprof_vendored_hiredis STATIC ${_hiredis_c})
target_include_directories(inferprof_vendored_hiredis PRIVATE ${_tp}/src/hiredis)
target_include_directories(inferprof_vendored_hiredis SYSTEM INTERFACE ${_tp}/include)
set_target_properties(inferprof_vendored_hiredis PROPERTIES POSITION_INDEPENDENT_CODE ON)
add_library(PkgConfig::HIREDIS ALIAS inferprof_vendored_hiredis)

add_library(inferprof_vendored_lmdb STATIC ${_tp}/src/lmdb/mdb.c ${_tp}/src/lmdb/midl.c)
target_include_directories(inferprof_vendored_lmdb PRIVATE ${_tp}/src/lmdb)
target_link_libraries(inferprof_vendored_lmdb PUBLIC Threads::Threads)
set(LMDB_LIBRARY inferprof_vendored_lmdb)
set(LMDB_INCLUDE_DIR ${_tp}/include)

