// Rank 1 raises memopt::error in its third step of a data-parallel fit, as a rank whose shard
// turns out to be unreadable would. It tells the other ranks, so that every rank leaves fit
// with a memopt::error, never a hang: rank 1 with its own, every other rank with one that
// names rank 1 and its error. Each rank prints its error and exits with 0 only when it is
// the expected one; every rank then finalizes MPI normally. CTest runs it on 3 ranks.
#include <cstdio>
#include <string>

#include "long_fit.hpp"

namespace mo = memopt;

namespace {

constexpr const char* kCause = "shard 1: image 17 is not a JPEG";

struct FailInThirdStep : mo::Callback {
  int rank = 0;
  void on_train_batch_begin(int batch) override {
    if (rank == 1 && batch == 2) throw mo::error(kCause);
  }
};

}  // namespace

int main(int argc, char** argv) {
  mo::distributed::MpiCommunicator comm(argc, argv);
  FailInThirdStep fail;
  fail.rank = comm.rank();
  try {
    mo::testing::fit_until_a_rank_fails(comm, fail);
  } catch (const mo::error& e) {
    const std::string what = e.what();
    const std::string expected = comm.rank() == 1
                                     ? std::string(kCause)
                                     : "rank 1 of " + std::to_string(comm.size()) +
                                           " stopped with an error: " + kCause + " (rank " +
                                           std::to_string(comm.rank()) + " stops with it)";
    const bool as_expected = what.find(expected) != std::string::npos;
    std::printf("rank %d: memopt::error: %s%s\n", comm.rank(), e.what(),
                as_expected ? "" : ("\n  expected it to contain: " + expected).c_str());
    return as_expected ? 0 : 1;
  }
  std::printf("rank %d: fit returned; expected memopt::error\n", comm.rank());
  return 1;
}
