// Rank 1 exits abruptly in its third step of a long data-parallel fit, as a crashed or
// killed process would; the other ranks wait for it in the gradients' all-reduce. mpirun
// must then end them all (Open MPI's default for a process that exits without
// MPI_Finalize). expect_job_ends.cmake checks that the job ends, in failure, well within its
// timeout: never a hang.
#include <cstdlib>

#include <memopt/distributed/mpi_communicator.hpp>
#include <memopt/memopt.hpp>

#include "../unit/blobs.hpp"

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
  mo::Model<mo::Sequential<mo::Dense<16, mo::ReLU>, mo::Dense<4, mo::Softmax>>, mo::Input<8>> model(
      1);
  model.compile(mo::SGD{}, mo::SparseCategoricalCrossentropy{});
  DieInThirdStep die;
  die.rank = comm.rank();
  const auto data = mo::testing::blobs(400, 5);
  (void)model.fit(data | mo::data::shard(comm.size(), comm.rank()) | mo::data::batch(4),
                  {.epochs = 1000, .callbacks = {&die}, .verbose = 0, .communicator = &comm});
  return 0;  // not reached: rank 1 dies, and mpirun ends the others
}
