# Helpers for memopt's own targets (tests, examples, benchmarks). Not installed: users of
# memopt::memopt choose their own flags.
include_guard(GLOBAL)

# memopt_warnings(<target>)
#   -Wall -Wextra -Wpedantic (and -Werror when MEMOPT_WERROR) for C++ sources. For CUDA
#   sources the host compiler gets -Wall -Wextra through -Xcompiler, and nvcc's
#   -Werror=all-warnings turns both nvcc's and the host compiler's warnings into errors.
#   (-Wpedantic is left out under nvcc: its generated host code is not pedantic-clean.)
function(memopt_warnings target)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    return()
  endif()
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:-Wall;-Wextra;-Wpedantic>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>")
  # GCC 12 (Debian 12's 12.2) warns "'__Y' may be used uninitialized" inside its own
  # avx512fintrin.h (_mm512_undefined_ps) wherever Eigen's AVX-512 kernels are inlined, as
  # with -march=native on an AVX-512 machine: GCC bug 105593. Its system-header location
  # does not silence it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>"
      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-maybe-uninitialized>")
  endif()
  # GCC 12 at -O3 also reports overlapping memcpy in std::string concatenation that cannot
  # overlap (-Wrestrict; GCC bugs 105329, 105651). memopt's own code avoids the pattern where
  # it can; this keeps a Release build of the tests compiling with GCC 12.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>"
      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-restrict>")
  endif()
  # And "writing 1 byte into a region of size 0" (-Wstringop-overflow) where {fmt} 9's
  # fill_t<char>::operator= is inlined into formatter<unsigned long long>::parse: fmt asserts
  # the fill is at most 4 bytes, which GCC cannot see. Which translation units it hits moves
  # with GCC's inlining choices (the examples at -O3 -march=native after summary() learned
  # the thread count).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:-Wno-stringop-overflow>"
      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-stringop-overflow>")
  endif()
  # And a memcpy "pointer overflow between offset [2, 9223372036854775807]" (-Warray-bounds)
  # inside char_traits<char>::copy where a std::string is built, in the unit tests at -O3 once
  # memopt.hpp became their precompiled header (which moves GCC's inlining choices again).
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds>"
      "$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-array-bounds>")
  endif()
  if(MEMOPT_WERROR)
    target_compile_options(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:-Werror>"
      "$<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>")
  endif()
endfunction()

# memopt_optimize(<target>)
#   With MEMOPT_NATIVE: -O3 and the host's vector instructions, whatever the build type.
#   Target options come after CMAKE_<LANG>_FLAGS_<CONFIG> on the command line, so this -O3
#   wins over a build type's -O2 or -O0.
function(memopt_optimize target)
  if(NOT MEMOPT_NATIVE OR NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    return()
  endif()
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CXX>:-O3;-march=native>"
    "$<$<COMPILE_LANGUAGE:CUDA>:-O3;-Xcompiler=-O3,-march=native>")
endfunction()

# memopt_sanitize(<target>)
#   With MEMOPT_SANITIZE: AddressSanitizer and UndefinedBehaviorSanitizer on compile and
#   link, stopping at the first error. Only C++ sources are instrumented (nvcc with the
#   sanitizers is slow and not needed: the CPU backend is the code under test there).
function(memopt_sanitize target)
  if(NOT MEMOPT_SANITIZE)
    return()
  endif()
  set(_flags -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_compile_options(${target} PRIVATE "$<$<COMPILE_LANGUAGE:CXX>:${_flags}>")
  target_link_options(${target} PRIVATE ${_flags})
endfunction()
