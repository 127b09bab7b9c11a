# The libraries memopt::onnx needs: ONNX's protobuf schema compiled to C++ (Debian:
# libonnx-dev, whose ONNX::onnx_proto target carries ONNX_ML=1 and ONNX_NAMESPACE=onnx) and
# the protobuf runtime it links (libprotobuf-dev), for memopt/io/onnx.hpp. Included by
# memopt's CMakeLists.txt and by the installed package config, so that both see the same
# targets. Sets memopt_ONNX_FOUND; never fails (ONNX export is optional).
include_guard(GLOBAL)

set(memopt_ONNX_FOUND FALSE)
# ONNX's package config names protobuf::libprotobuf without looking for it: find it first.
find_package(Protobuf QUIET)
if(TARGET protobuf::libprotobuf)
  find_package(ONNX CONFIG QUIET)
  if(TARGET onnx_proto)
    set(memopt_ONNX_FOUND TRUE)
  endif()
endif()
