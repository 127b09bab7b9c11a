# Warns, once per project, when the including project compiles memopt without optimization:
# a single-config generator (Ninja, Makefiles) with CMAKE_BUILD_TYPE empty adds no -O flag,
# so GCC and Clang compile at -O0, where memopt's header-only kernels train several times
# slower (3.3x, measured on a user's image classifier). Multi-config generators (Visual
# Studio, Ninja Multi-Config) choose the configuration at build time: nothing to warn about.
# Included by the installed memoptConfig.cmake and by memopt's CMakeLists.txt when another
# project adds it with add_subdirectory.
get_property(_memopt_multi_config GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
get_property(_memopt_warned GLOBAL PROPERTY MEMOPT_BUILD_TYPE_WARNED)
if(NOT _memopt_multi_config AND NOT _memopt_warned AND "${CMAKE_BUILD_TYPE}" STREQUAL ""
   AND NOT "${CMAKE_CXX_FLAGS}" MATCHES "(^| )[-/]O([0-3sgz]|fast)?( |$)")
  set_property(GLOBAL PROPERTY MEMOPT_BUILD_TYPE_WARNED TRUE)
  message(WARNING
    "memopt: CMAKE_BUILD_TYPE is empty, so memopt's header-only code compiles without "
    "optimization (-O0) and trains several times slower. Configure with "
    "-DCMAKE_BUILD_TYPE=Release (or RelWithDebInfo).")
endif()
unset(_memopt_multi_config)
unset(_memopt_warned)
