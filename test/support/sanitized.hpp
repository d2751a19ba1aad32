#pragma once
// True in a sanitizer build (test/CMakeLists.txt defines INFERPROF_SANITIZED
// for the test targets there), for the tests that cannot run there or run shorter:
// the tokenizer (ASan aborts on RTLD_DEEPBIND), a run under `ulimit -v`
// (ASan's shadow memory), the cache policies' random traces.
#ifdef INFERPROF_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
