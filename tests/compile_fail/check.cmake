# Builds one target of an existing build tree and checks the outcome.
#
#   cmake -DBUILD_DIR=<dir> -DTARGET=<target> -DSOURCE=<file> [-DCONFIG=<cfg>] [-DJOBS=<n>]
#         -P check.cmake
#     The build must FAIL and its output must match the regex on SOURCE's first line,
#     `// expect: <regex>`. Prints the first matching line of the compiler's output.
#
#   cmake -DBUILD_DIR=<dir> -DTARGET=<target> -DEXPECT_SUCCESS=ON [-DGENERATOR=<generator>]
#         [-DCONFIG=<cfg>] [-DJOBS=<n>] -P check.cmake
#     The build must SUCCEED (used by tests/self_contained). With GENERATOR a Ninja or
#     Makefile generator, the build keeps going after an error so that every failure shows.
#
#   With -DNINJA=<ninja> (a single-config Ninja tree, Unix), TARGET's commands are read with
#   `ninja -t commands` and run here instead: ninja's logs are then never written, so such tests
#   need no lock on the build tree and run in parallel (the compile_fail tests do this).
foreach(_var IN ITEMS BUILD_DIR TARGET)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "check.cmake: -D${_var}=... is required")
  endif()
endforeach()

set(_cmd ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${TARGET})
if(CONFIG)
  list(APPEND _cmd --config ${CONFIG})
endif()
if(JOBS)
  list(APPEND _cmd --parallel ${JOBS})
endif()

# Runs TARGET's commands one by one, without ninja, into _rc and _out.
macro(run_target_commands)
  execute_process(COMMAND ${NINJA} -C ${BUILD_DIR} -t commands ${TARGET}
                  RESULT_VARIABLE _rc OUTPUT_VARIABLE _commands ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "${TARGET}: `ninja -t commands` failed (exit ${_rc}):\n${_out}")
  endif()
  string(STRIP "${_commands}" _commands)
  if(_commands STREQUAL "")
    message(FATAL_ERROR "${TARGET}: ninja lists no command to run for it")
  endif()
  # One command per line, split as a CMake list: a ';' inside a command would split it too.
  if(_commands MATCHES ";")
    message(FATAL_ERROR "${TARGET}: a command holds ';', which check.cmake cannot run:\n"
                        "${_commands}")
  endif()
  string(REPLACE "\n" ";" _commands "${_commands}")
  set(_out "")
  foreach(_command IN LISTS _commands)
    execute_process(COMMAND sh -c "${_command}" WORKING_DIRECTORY ${BUILD_DIR}
                    RESULT_VARIABLE _rc OUTPUT_VARIABLE _step ERROR_VARIABLE _step)
    string(APPEND _out "${_step}")
    if(NOT _rc EQUAL 0)
      break()
    endif()
  endforeach()
endmacro()

# Builds TARGET into _rc and _out: its commands run here under NINJA, else a nested build.
macro(build_target)
  if(NINJA)
    run_target_commands()
  else()
    execute_process(COMMAND ${_cmd} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  endif()
endmacro()

if(EXPECT_SUCCESS)
  if(GENERATOR MATCHES "Ninja")
    list(APPEND _cmd -- -k 0)
  elseif(GENERATOR MATCHES "Makefiles")
    list(APPEND _cmd -- -k)
  endif()
  build_target()
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "${TARGET}: the build failed (exit ${_rc}); see the output above")
  endif()
  message(STATUS "${TARGET}: built")
  return()
endif()

if(NOT DEFINED SOURCE)
  message(FATAL_ERROR "check.cmake: -DSOURCE=... or -DEXPECT_SUCCESS=ON is required")
endif()
file(READ ${SOURCE} _head LIMIT 1024)
if(NOT _head MATCHES "^// expect: ([^\r\n]+)")
  message(FATAL_ERROR "${SOURCE}: the first line must be `// expect: <regex>`")
endif()
string(STRIP "${CMAKE_MATCH_1}" _expect)

build_target()
if(_rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE}: compiled, but it must fail with a message matching\n"
                      "  ${_expect}")
endif()

# Report the first line of the output that carries the expected message.
string(REGEX MATCH "[^\n]*(${_expect})[^\n]*" _found "${_out}")
if(_found STREQUAL "")
  message("${_out}")
  message(FATAL_ERROR "${SOURCE}: failed to compile as it must, but no line of the output "
                      "above matches\n  ${_expect}")
endif()
message(STATUS "${SOURCE}: fails to compile as expected:\n  ${_found}")
