// The gradient buckets of data parallelism (issue 14, item 3): planned at compile time in
// reverse node order under PyTorch DDP's caps, and all-reduced by fit as backward fills them.
#include <doctest/doctest.h>

#include <cstddef>
#include <ratio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <memopt/memopt.hpp>

#include "blobs.hpp"

namespace mo = memopt;

namespace {

using Convnet =
    mo::Sequential<mo::Rescaling<std::ratio<1, 255>>, mo::Conv2D<32, 3, mo::ReLU>,
                   mo::MaxPooling2D<2>, mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                   mo::Flatten, mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;
using ConvSpec = mo::ModelSpec<Convnet, mo::Input<28, 28, 1>, mo::float32>;

// Parameters: 2304, 16640, 16640 and 2600 bytes, from the first layer up.
using Deep = mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>,
                            mo::Dense<64, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using DeepSpec = mo::ModelSpec<Deep, mo::Input<8>, mo::float32>;

// The facts every bucket plan must have: the buckets cover the flat buffer exactly once, as
// contiguous ranges of whole nodes taken from the last node down, and each is within its cap
// unless it holds one node alone that exceeds it; and no bucket could have taken the next
// node without passing its cap (nothing is cut early).
template <class Spec, class Caps>
constexpr bool well_formed() {
  constexpr auto b = mo::plan::gradient_buckets<Spec, Caps>();
  if (b.count == 0) return false;
  std::size_t end = Spec::parameter_count;  // the buffer is consumed from its end down
  for (std::size_t i = 0; i < b.count; ++i) {
    const mo::plan::GradientBucket& k = b[i];
    if (k.offset + k.count != end || k.first_node > k.last_node) return false;
    if (i > 0 && k.last_node >= b[i - 1].first_node) return false;
    std::size_t params = 0, nodes = 0;
    for (std::size_t n = k.first_node; n <= k.last_node; ++n) {
      params += Spec::nodes[n].parameters;
      nodes += Spec::nodes[n].parameters > 0;
    }
    if (params != k.count || Spec::nodes[k.first_node].parameter_offset != k.offset) return false;
    const std::size_t cap = i == 0 ? Caps::first_bytes : Caps::rest_bytes;
    if (k.bytes() > cap && nodes != 1) return false;
    if (i + 1 < b.count &&
        k.bytes() + Spec::nodes[b[i + 1].last_node].parameters * sizeof(float) <= cap)
      return false;
    end = k.offset;
  }
  return end == 0;
}

static_assert(well_formed<ConvSpec, mo::BucketCaps<>>());
static_assert(well_formed<ConvSpec, mo::BucketCaps<4096, 65536>>());
static_assert(well_formed<ConvSpec, mo::BucketCaps<1, 1>>());
static_assert(well_formed<DeepSpec, mo::BucketCaps<>>());
static_assert(well_formed<DeepSpec, mo::BucketCaps<4096, 20000>>());
static_assert(well_formed<DeepSpec, mo::BucketCaps<4096, 34000>>());
static_assert(well_formed<DeepSpec, mo::BucketCaps<4096, 16640>>());
static_assert(well_formed<DeepSpec, mo::BucketCaps<20000, 4096>>());

// The convnet's 136 KiB fit in DDP's first 1 MiB bucket.
static_assert(mo::plan::gradient_buckets<ConvSpec>().count == 1);
static_assert(mo::plan::gradient_buckets<ConvSpec>()[0].count == ConvSpec::parameter_count);

// Small caps: Dense's 64,040 bytes alone pass the 4 KiB first cap, conv2d_1's 73,984 the
// 64 KiB one, and conv2d's 1,280 bytes end the buffer: three buckets, from the top down.
constexpr auto conv_small = mo::plan::gradient_buckets<ConvSpec, mo::BucketCaps<4096, 65536>>();
static_assert(conv_small.count == 3);
static_assert(conv_small[0].bytes() == 64'040 && conv_small[1].bytes() == 73'984 &&
              conv_small[2].bytes() == 1'280);
static_assert(conv_small[0].first_node > conv_small[1].first_node &&
              conv_small[1].first_node > conv_small[2].first_node);

// Two 16,640-byte layers share a 34,000-byte bucket, where the first layer's 2,304 no longer
// fit; under a cap of 16,640 bytes each is alone.
static_assert(mo::plan::gradient_buckets<DeepSpec, mo::BucketCaps<4096, 34000>>().count == 3);
constexpr auto deep_small = mo::plan::gradient_buckets<DeepSpec, mo::BucketCaps<4096, 16640>>();
static_assert(deep_small.count == 4);
static_assert(deep_small[0].first_node == 3 && deep_small[3].first_node == 0);

// What the communicator is asked, in order: "S<floats>" a started sum, "T" a test, "W" a wait,
// "B" a blocking float sum. One rank, so every sum leaves the values as they are; test says
// "not yet", so that every start stays in flight until finish_step waits.
struct RecordingCommunicator {
  std::vector<std::string> calls;
  int rank() const { return 0; }
  int size() const { return 1; }
  void all_reduce_sum(std::span<float> /*values*/) { calls.push_back("B"); }
  void all_reduce_sum(std::span<double> /*values*/) {}
  void broadcast(std::span<float> /*values*/, int /*root*/) {}
  void barrier() {}
  mo::distributed::Request start_all_reduce_sum(std::span<float> values) {
    calls.push_back("S" + std::to_string(values.size()));
    return calls.size();
  }
  bool test(mo::distributed::Request /*request*/) {
    calls.push_back("T");
    return false;
  }
  void wait(mo::distributed::Request /*request*/) { calls.push_back("W"); }
  void notify_failure(std::string_view /*cause*/) {}
};
static_assert(mo::distributed::Communicator<RecordingCommunicator>);

template <class Caps>
using DeepModel = mo::Model<Deep, mo::Input<8>, mo::float32, mo::cpu, Caps>;

template <class Caps>
std::vector<float> trained(mo::distributed::CommunicatorRef comm) {
  DeepModel<Caps> model(5);
  model.compile(mo::Adam{}, mo::SparseCategoricalCrossentropy{});
  const auto data = mo::testing::blobs(3 * 16, 3);
  (void)model.fit(data | mo::data::batch(16), {.epochs = 1, .verbose = 0, .communicator = comm});
  return model.get_weights();
}

}  // namespace

TEST_CASE("fit starts each bucket's all-reduce as backward finishes it, last layer first") {
  RecordingCommunicator comm;
  const std::vector<float> found = trained<mo::BucketCaps<4096, 16640>>(&comm);
  // Per step: each bucket starts after its lowest layer's backward, in reverse layer order,
  // and the sums in flight are tested between layers; finish_step waits for all four.
  const std::vector<std::string> step{"S650", "T", "S4160", "T", "S4160", "T",
                                      "S576", "T", "W",     "W", "W",     "W"};
  std::vector<std::string> expected;
  for (int s = 0; s < 3; ++s) expected.insert(expected.end(), step.begin(), step.end());
  CHECK(comm.calls == expected);
  // One rank: the weights are those of a fit without a communicator, bit for bit.
  CHECK(found == trained<mo::BucketCaps<4096, 16640>>(nullptr));
}

TEST_CASE("under the default caps the whole buffer is one bucket, started after backward") {
  RecordingCommunicator comm;
  (void)trained<mo::BucketCaps<>>(&comm);
  const std::vector<std::string> step{"S" + std::to_string(DeepSpec::parameter_count), "T", "W"};
  CHECK(std::vector<std::string>(comm.calls.begin(), comm.calls.begin() + 3) == step);
  CHECK(comm.calls.size() == 3 * step.size());
}

TEST_CASE("summary lists the gradient buckets in the order they are all-reduced") {
  const std::string s = DeepModel<mo::BucketCaps<4096, 34000>>(1).summary_string();
  CHECK(s.find("Gradient buckets (data parallel; caps 4.00 KiB first, then 33.20 KiB): 3\n"
               "  [dense_3] 2.54 KiB\n"
               "  [dense_2, dense_1] 32.50 KiB\n"
               "  [dense] 2.25 KiB\n") != std::string::npos);
  const std::string d = DeepModel<mo::BucketCaps<>>(1).summary_string();
  CHECK(d.find("Gradient buckets (data parallel; caps 1.00 MiB first, then 25.00 MiB): 1\n"
               "  [dense_3, dense_2, dense_1, dense] 37.29 KiB\n") != std::string::npos);
}
