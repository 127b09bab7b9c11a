# Compiles a program that includes only <memopt/core.hpp> with the compiler's include trace
# (-H, GCC and Clang) and fails if a heavy header comes in: JSON, Eigen, oneDNN, {fmt}, or the
# thread headers (the light core must stay light; see include/memopt/core.hpp).
#
#   cmake -DCXX=<compiler> -DINCLUDE_DIR=<dir> -DSOURCE=<file> -P light_core.cmake
foreach(_var IN ITEMS CXX INCLUDE_DIR SOURCE)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "light_core.cmake: -D${_var}=... is required")
  endif()
endforeach()

execute_process(
  COMMAND ${CXX} -std=c++20 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -H
          -I${INCLUDE_DIR} ${SOURCE}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
if(NOT _rc EQUAL 0)
  message("${_out}")
  message(FATAL_ERROR "${SOURCE}: does not compile (exit ${_rc}); see the output above")
endif()

# -H prints one line per header opened: dots for the depth, then its path.
string(REGEX MATCHALL "(^|\n)\\.+ [^\n]+" _trace "${_out}")
list(LENGTH _trace _count)
if(_count EQUAL 0)
  message(FATAL_ERROR "${SOURCE}: the compiler printed no include trace for -H")
endif()
set(_heavy "")
foreach(_line IN LISTS _trace)
  string(STRIP "${_line}" _line)
  if(_line MATCHES "(/Eigen/|/eigen3/|/nlohmann/|/dnnl|/oneapi/|/fmt/|/(thread|future|condition_variable|stop_token)$)")
    list(APPEND _heavy "${_line}")
  endif()
endforeach()
if(_heavy)
  list(JOIN _heavy "\n  " _list)
  message(FATAL_ERROR "${SOURCE}: <memopt/core.hpp> must not include JSON, Eigen, oneDNN, "
                      "{fmt} or threads; the include trace has\n  ${_list}\nMove what needs "
                      "them behind an opt-in header (as model.hpp, plan/report.hpp).")
endif()
message(STATUS "${SOURCE}: ${_count} headers, none of them heavy")
