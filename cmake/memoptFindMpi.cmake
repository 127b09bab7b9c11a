# The library memopt::mpi needs: MPI's C interface (Debian: libopenmpi-dev, openmpi-bin for
# mpirun), for memopt/distributed/mpi_communicator.hpp. Included by memopt's CMakeLists.txt
# and by the installed package config, so that both see the same target. Sets
# memopt_MPI_FOUND; never fails (data parallelism across processes is optional).
include_guard(GLOBAL)

# memopt uses MPI's C functions only; the C++ bindings (gone from MPI 3) warn under -Wextra.
set(MPI_CXX_SKIP_MPICXX TRUE CACHE BOOL "Skip MPI's deprecated C++ bindings")

set(memopt_MPI_FOUND FALSE)
find_package(MPI QUIET COMPONENTS CXX)
if(MPI_CXX_FOUND AND TARGET MPI::MPI_CXX)
  set(memopt_MPI_FOUND TRUE)
endif()
