# Runs the safetensors fuzzer for SECONDS over a corpus kept in the build tree (seeded from
# SEEDS), failing on any crash, sanitizer report, leak or hang (an input slower than 10 s).
foreach(_var FUZZER CORPUS SEEDS DICT SECONDS)
  if(NOT DEFINED ${_var})
    message(FATAL_ERROR "run_fuzz.cmake: -D${_var}=... is required")
  endif()
endforeach()
file(MAKE_DIRECTORY ${CORPUS})
execute_process(
  COMMAND ${FUZZER} -max_total_time=${SECONDS} -max_len=4096 -timeout=10 -rss_limit_mb=2048
          -print_final_stats=1 -dict=${DICT} -artifact_prefix=${CORPUS}/../ ${CORPUS} ${SEEDS}
  RESULT_VARIABLE _result)
file(GLOB _corpus ${CORPUS}/*)
list(LENGTH _corpus _count)
message(STATUS "fuzz.safetensors: corpus holds ${_count} inputs in ${CORPUS}")
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "fuzz.safetensors: the fuzzer failed (exit ${_result}); the input that "
                      "failed is in ${CORPUS}/.. (crash-*, leak-*, timeout-*)")
endif()
