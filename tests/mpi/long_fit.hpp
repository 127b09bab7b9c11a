#pragma once
// A data-parallel fit long enough (1000 epochs) that it only ends when a rank fails: the
// program a failure test breaks with `callback` (rank_dies.cpp, rank_fails.cpp).

#include <memopt/distributed/mpi_communicator.hpp>
#include <memopt/memopt.hpp>

#include "../unit/blobs.hpp"

namespace memopt::testing {

inline void fit_until_a_rank_fails(distributed::MpiCommunicator& comm, Callback& callback) {
  Model<Sequential<Dense<16, ReLU>, Dense<4, Softmax>>, Input<8>> model(1);
  model.compile(SGD{}, SparseCategoricalCrossentropy{});
  const auto samples = blobs(400, 5);
  (void)model.fit(samples | data::shard(comm.size(), comm.rank()) | data::batch(4),
                  {.epochs = 1000, .callbacks = {&callback}, .verbose = 0, .communicator = &comm});
}

}  // namespace memopt::testing
