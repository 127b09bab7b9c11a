// A program outside memopt's tree: it reaches memopt only through CMake (find_package or
// add_subdirectory) and the public umbrella header.
#include <memopt/memopt.hpp>
// oneDNN comes with find_package(memopt): its header is found and its library linked.
#include <memopt/backend/cpu/dnnl/context.hpp>

#include <cstdio>

// The card's own spelling must compile as written.
using Net =
    memopt::Sequential<memopt::Dense<128, memopt::ReLU>, memopt::Dense<10, memopt::Softmax>>;
static_assert(sizeof(Net) > 0,
              "memopt::Sequential<Dense<128, ReLU>, Dense<10, Softmax>> is a type");

int main() {
  try {
    throw memopt::error("consumer: memopt::error can be thrown and caught");
  } catch (const memopt::error& e) {
    std::printf("memopt consumer ok (%s; oneDNN %s)\n", e.what(),
                memopt::cpu_backend::onednn::version_string().c_str());
  }
  return 0;
}
