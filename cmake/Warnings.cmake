# -Werror on our own code only; third-party headers come in as SYSTEM includes.
function(inferprof_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wundef -Werror
    -Wno-error=deprecated-declarations)
endfunction()
