# Turns a text file into a C++ source defining `std::string_view NAME`, so the
# default profile ships inside the binary and stays identical to profiles/.
function(inferprof_embed_text input name output)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DNAME=${name} -DOUTPUT=${output}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedFileScript.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/EmbedFileScript.cmake
    COMMENT "Embedding ${input}")
endfunction()
