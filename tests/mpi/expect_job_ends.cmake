# Runs `MPIRUN EXE` and passes when the job ends in failure within 60 s: a rank that dies
# must end the others, not leave them waiting. Usage:
#   cmake "-DMPIRUN=mpirun;-np;2" -DEXE=program -P expect_job_ends.cmake
execute_process(COMMAND ${MPIRUN} ${EXE}
                RESULT_VARIABLE result
                OUTPUT_VARIABLE out
                ERROR_VARIABLE err
                TIMEOUT 60)
if(result MATCHES "timeout")
  message(FATAL_ERROR "the job did not end within 60 s after a rank died (it hangs):\n${out}${err}")
endif()
if(result EQUAL 0)
  message(FATAL_ERROR "expected the job to fail after rank 1 died, but it succeeded:\n${out}${err}")
endif()
message(STATUS "the job ended as expected (${result}):\n${out}${err}")
