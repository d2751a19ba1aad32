#pragma once
// True in a sanitizer build's tests that cannot run there (test/CMakeLists.txt
// defines INFERPROF_SANITIZED for those files): the tokenizer (ASan aborts on
// RTLD_DEEPBIND) and a run under `ulimit -v` (ASan's shadow memory).
#ifdef INFERPROF_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
