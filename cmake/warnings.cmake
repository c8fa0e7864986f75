# Strict warnings for our own targets only (third-party headers are -isystem).
add_library(mdcast_warnings INTERFACE)
target_compile_options(mdcast_warnings INTERFACE
  -Wall -Wextra -Werror -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
  -Wdouble-promotion -Wformat=2 -Wimplicit-fallthrough)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 false positives around std::array/memcpy in inlined code (PR 105651 family).
  target_compile_options(mdcast_warnings INTERFACE -Wno-stringop-overflow -Wno-array-bounds -Wno-restrict)
endif()
