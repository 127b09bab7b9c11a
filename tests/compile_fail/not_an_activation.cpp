// expect: Dense: the second argument must be an activation
#include <memopt/memopt.hpp>

memopt::Dense<16, float> layer;
