// expect: Sequential: needs at least one layer
// The twin (without MEMOPT_FAILTEST) holds one layer and must compile.
#include <memopt/memopt.hpp>

#ifdef MEMOPT_FAILTEST
memopt::Sequential<> net;
#else
memopt::Sequential<memopt::Dense<1>> net;
#endif
