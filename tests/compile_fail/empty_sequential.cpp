// expect: Sequential: needs at least one layer
#include <memopt/memopt.hpp>

memopt::Sequential<> net;
