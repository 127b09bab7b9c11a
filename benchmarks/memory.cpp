// The memory of a training step, as planned at compile time: arena, lower bound, naive (one
// allocation per tensor) and TensorFlow Lite's greedy-by-size, for the models and batches of
// the memory issue, under float32 and mixed_float16. A table printer, not a timing: every
// number here is a compile-time fact.
//
//   bench_memory            Markdown table on stdout
//
// Compare with benchmarks/compare/torch_memory.py (PyTorch's peak for the same steps).

#include <cstddef>
#include <cstdio>
#include <initializer_list>
#include <ratio>
#include <string>

#include <fmt/format.h>

#include <memopt/memopt.hpp>

namespace mo = memopt;

namespace {

using Small = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
using Wide =
    mo::Sequential<mo::Dense<512, mo::ReLU>, mo::Dense<512, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
template <class A>
using Narrow =
    mo::Sequential<mo::Dense<64, A>, mo::Dense<64, mo::ReLU>, mo::Dense<64, A>,
                   mo::Dense<64, mo::ReLU>, mo::Dense<64, A>, mo::Dense<64, mo::ReLU>,
                   mo::Dense<64, A>, mo::Dense<64, mo::ReLU>, mo::Dense<10, mo::Softmax>>;

std::string mib(std::size_t bytes) {
  return fmt::format("{:.3f}", static_cast<double>(bytes) / (1 << 20));
}

// Keras's MNIST convnet (examples/02_fashion_mnist_cnn), "mnist-convnet" in torch_memory.py.
using Convnet = mo::Sequential<mo::Conv2D<32, 3, mo::ReLU>, mo::MaxPooling2D<2>,
                               mo::Conv2D<64, 3, mo::ReLU>, mo::MaxPooling2D<2>, mo::Flatten,
                               mo::Dropout<std::ratio<1, 2>>, mo::Dense<10, mo::Softmax>>;

template <class Net, class In, class P>
void row(const char* name, std::size_t batch) {
  using S = mo::ModelSpec<Net, In, P>;
  using F = mo::ModelSpec<Net, In, mo::float32>;
  const auto plan = mo::plan::training_plan<S>(batch);
  const auto unplaced = mo::plan::training_buffers_of(mo::plan::graph_of<S>(), batch);
  const auto greedy = mo::plan::detail::place_greedy(unplaced, mo::plan::detail::Order::size);
  const auto infer = mo::plan::inference_plan<S>(batch);
  const std::size_t f32 = mo::plan::training_plan<F>(batch).arena_bytes;
  fmt::print(
      "| {:<24} | {:>5} | {:<13} | {:>10} | {:>10} | {:>10} | {:>10} | {:>6.2f}x | {:>6.3f} | "
      "{:>5.2f} | {:>10} |\n",
      name, batch, P::name, mib(plan.arena_bytes), mib(plan.lower_bound_bytes()),
      mib(plan.naive_bytes()), mib(greedy.arena_bytes),
      static_cast<double>(plan.naive_bytes()) / static_cast<double>(plan.arena_bytes),
      static_cast<double>(greedy.arena_bytes) / static_cast<double>(plan.arena_bytes),
      static_cast<double>(plan.arena_bytes) / static_cast<double>(f32), mib(infer.arena_bytes));
}

template <class Net, class In>
void rows(const char* name, std::initializer_list<std::size_t> batches = {32, 256, 4096}) {
  for (std::size_t batch : batches) {
    row<Net, In, mo::float32>(name, batch);
    row<Net, In, mo::mixed_float16>(name, batch);
  }
}

}  // namespace

int main() {
  fmt::print(
      "Training-step memory planned by memopt (MiB = 2^20 bytes). arena: what memopt "
      "allocates; lower bound: the most bytes alive at one step; naive: one allocation per "
      "tensor; greedy: TensorFlow Lite's greedy-by-size best fit on the same buffers. Every "
      "buffer of the step counts (input, labels, activations, masks, gradients, parameter "
      "gradients, step scalars); parameters and optimizer state do not. /f32: arena over the "
      "float32 arena. infer: the predict arena.\n\n");
  fmt::print(
      "| {:<24} | {:>5} | {:<13} | {:>10} | {:>10} | {:>10} | {:>10} | {:>7} | {:>6} | "
      "{:>5} | {:>10} |\n",
      "model", "batch", "policy", "arena", "lower bnd", "naive", "greedy", "naive/a", "grd/a",
      "/f32", "infer");
  fmt::print(
      "|{:-<26}|{:->7}|{:-<15}|{:->12}|{:->12}|{:->12}|{:->12}|{:->9}|{:->8}|{:->7}|{:->12}|\n", "",
      "", "", "", "", "", "", "", "", "", "");
  rows<Small, mo::Input<784>>("784-128-10");
  rows<Wide, mo::Input<784>>("784-512-512-10");
  rows<Narrow<mo::ReLU>, mo::Input<64>>("64x8-10");
  rows<Narrow<mo::Recompute<mo::ReLU>>, mo::Input<64>>("64x8-10, every other R");
  rows<Convnet, mo::Input<28, 28, 1>>("mnist-convnet", {32, 128});
  return 0;
}
