file(READ ${INPUT} content)
# A raw string literal with a delimiter that cannot occur in a TOML profile.
file(WRITE ${OUTPUT} "// Generated from ${INPUT}; do not edit.\n#include <string_view>\nnamespace inferprof::embedded {\nextern const std::string_view ${NAME};\nconst std::string_view ${NAME} = R\"inferprof_embed(${content})inferprof_embed\";\n}\n")
