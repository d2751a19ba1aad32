#pragma once
// Unit tests that use libtorch: libtorch first, then doctest, whose CHECK
// macros must win over libtorch's glog-style ones of the same names.
#include "pipeline/torch_detail.hpp"
#undef CHECK
#undef CHECK_EQ
#undef CHECK_NE
#undef CHECK_LT
#undef CHECK_LE
#undef CHECK_GT
#undef CHECK_GE
#include <doctest/doctest.h>
