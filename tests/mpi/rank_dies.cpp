// Rank 1 exits abruptly in its third step of a long data-parallel fit, as a crashed or
// killed process would; the other ranks wait for it in the gradients' all-reduce. mpirun
// must then end them all (Open MPI's default for a process that exits without
// MPI_Finalize). expect_job_ends.cmake checks that the job ends, in failure, well within its
// timeout: never a hang.
#include <cstdlib>

#include "long_fit.hpp"

namespace mo = memopt;

namespace {

struct DieInThirdStep : mo::Callback {
  int rank = 0;
  void on_train_batch_begin(int batch) override {
    if (rank == 1 && batch == 2) std::_Exit(3);
  }
};

}  // namespace

int main(int argc, char** argv) {
  mo::distributed::MpiCommunicator comm(argc, argv);
  DieInThirdStep die;
  die.rank = comm.rank();
  mo::testing::fit_until_a_rank_fails(comm, die);
  return 0;  // not reached: rank 1 dies, and mpirun ends the others
}
