# Builds and runs the consumer program of tests/cmake in a fresh WORK_DIR.
#
#   cmake -DMODE=install|subdir -DWORK_DIR=<dir> -DBUILD_DIR=<memopt build> -DSOURCE_DIR=<repo>
#         -DGENERATOR=<gen> -DCXX_COMPILER=<c++> [-DMAKE_PROGRAM=<ninja>] [-DCONFIG=<cfg>]
#         [-DPREFIX_PATH=<a|b>] [-DENABLE_CUDA=ON|OFF] [-DCUDA_COMPILER=<nvcc>]
#         [-DCUDA_ARCHITECTURES=<a|b>] [-DBUILD_TYPE_WARNING=ON] -P run_consumer.cmake
#
#   install: `cmake --install BUILD_DIR --prefix WORK_DIR/prefix`, then the project
#            tests/cmake/consumer finds memopt there with find_package(memopt CONFIG REQUIRED)
#   subdir:  the project tests/cmake/subdir adds SOURCE_DIR with add_subdirectory
#   BUILD_TYPE_WARNING: only configure the project, without a build type and then with
#            Release, and check that memopt warns of the -O0 build in the first only (for a
#            single-config generator; a multi-config one must warn in neither)
# Lists are passed with `|` in place of `;`.
foreach(_var IN ITEMS MODE WORK_DIR BUILD_DIR SOURCE_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "run_consumer.cmake: -D${_var}=... is required")
  endif()
endforeach()

function(run_step what)
  string(REPLACE ";" " " _shown "${ARGN}")
  message(STATUS "[${what}] ${_shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message("${_out}")
    message(FATAL_ERROR "${what} failed (exit ${_rc}); see the output above")
  endif()
  set(step_output "${_out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

set(_config_args "")
if(CONFIG)
  set(_config_args --config ${CONFIG})
endif()

set(_configure_args -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(MAKE_PROGRAM)
  list(APPEND _configure_args "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()
if(CONFIG)
  list(APPEND _configure_args "-DCMAKE_BUILD_TYPE=${CONFIG}")
endif()
string(REPLACE "|" ";" _prefix_path "${PREFIX_PATH}")

if(MODE STREQUAL "install")
  set(_prefix ${WORK_DIR}/prefix)
  run_step("install memopt" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${_prefix}
           ${_config_args})
  foreach(_file IN ITEMS include/memopt lib/cmake/memopt/memoptConfig.cmake
                         lib/cmake/memopt/memoptConfigVersion.cmake
                         lib/cmake/memopt/memoptTargets.cmake)
    if(NOT EXISTS ${_prefix}/${_file})
      message(FATAL_ERROR "install: ${_prefix}/${_file} is missing")
    endif()
  endforeach()
  list(PREPEND _prefix_path ${_prefix})
  set(_project_dir ${SOURCE_DIR}/tests/cmake/consumer)
elseif(MODE STREQUAL "subdir")
  list(APPEND _configure_args "-DMEMOPT_SOURCE_DIR=${SOURCE_DIR}")
  if(DEFINED ENABLE_CUDA)
    list(APPEND _configure_args "-DMEMOPT_ENABLE_CUDA=${ENABLE_CUDA}")
  endif()
  if(CUDA_COMPILER)
    list(APPEND _configure_args "-DCMAKE_CUDA_COMPILER=${CUDA_COMPILER}")
    # Lists cannot travel through execute_process arguments; CUDAARCHS is read by CMake
    # when CMAKE_CUDA_ARCHITECTURES is not set.
    string(REPLACE "|" ";" _archs "${CUDA_ARCHITECTURES}")
    set(ENV{CUDAARCHS} "${_archs}")
  endif()
  set(_project_dir ${SOURCE_DIR}/tests/cmake/subdir)
else()
  message(FATAL_ERROR "run_consumer.cmake: MODE must be install or subdir, not '${MODE}'")
endif()
if(_prefix_path)
  # Through the environment (a native path list), since a ;-list cannot be one argument.
  string(REPLACE ";" ":" _env_prefix_path "${_prefix_path}")
  if(DEFINED ENV{CMAKE_PREFIX_PATH} AND NOT "$ENV{CMAKE_PREFIX_PATH}" STREQUAL "")
    string(APPEND _env_prefix_path ":$ENV{CMAKE_PREFIX_PATH}")
  endif()
  set(ENV{CMAKE_PREFIX_PATH} "${_env_prefix_path}")
endif()

if(BUILD_TYPE_WARNING)
  list(FILTER _configure_args EXCLUDE REGEX "^-DCMAKE_BUILD_TYPE=")
  set(_warning "CMAKE_BUILD_TYPE is empty")
  if(GENERATOR MATCHES "Multi-Config|Visual Studio|Xcode")
    set(_expected_without FALSE)
  else()
    set(_expected_without TRUE)
  endif()
  foreach(_build_type IN ITEMS "" Release)
    set(_dir ${WORK_DIR}/build-type-${_build_type})
    run_step("configure consumer, CMAKE_BUILD_TYPE='${_build_type}'" ${CMAKE_COMMAND}
             -S ${_project_dir} -B ${_dir} ${_configure_args}
             "-DCMAKE_BUILD_TYPE=${_build_type}")
    string(FIND "${step_output}" "${_warning}" _at)
    if(_build_type STREQUAL "" AND _expected_without)
      set(_expected TRUE)
    else()
      set(_expected FALSE)
    endif()
    if(_expected AND _at EQUAL -1)
      message("${step_output}")
      message(FATAL_ERROR "no build type: expected memopt's warning '${_warning}'")
    elseif(NOT _expected AND NOT _at EQUAL -1)
      message("${step_output}")
      message(FATAL_ERROR "CMAKE_BUILD_TYPE='${_build_type}': memopt warned '${_warning}'")
    endif()
  endforeach()
  message(STATUS "memopt warns of an empty build type as expected")
  return()
endif()

run_step("configure consumer" ${CMAKE_COMMAND} -S ${_project_dir} -B ${WORK_DIR}/build
         ${_configure_args})
run_step("build consumer" ${CMAKE_COMMAND} --build ${WORK_DIR}/build ${_config_args})
run_step("run consumer" ${WORK_DIR}/build/bin/memopt_consumer)
message(STATUS "consumer says: ${step_output}")
