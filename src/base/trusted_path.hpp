#pragma once
// Whether a shared library may be loaded from a path: inferprof loads its own
// libraries (the model pipeline, the SentencePiece shim) only from its install
// layout, and only where no other user could have put a file.
#include <string>

namespace inferprof {

// Empty when `path` (a regular file) and every folder above it are owned by
// root or this user and writable by no other user (group write only for this
// user's group or root's; a folder with the sticky bit, as /tmp, is fine, as
// what others made in it fails the owner check); else why, naming the path.
std::string untrusted_reason(const std::string& path);

}  // namespace inferprof
