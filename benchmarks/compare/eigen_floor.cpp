// The floor of the CPU comparison: Fashion-MNIST training of 784-128-10 (ReLU, then softmax
// with sparse categorical cross-entropy) at batch 32 with Keras's Adam, written directly
// against Eigen with nothing around it: no plan, no arena, no policy, no data adaptors.
//
// It does the work memopt's CPU executor must do on every step (the same five matrix
// products, the same bias, ReLU and softmax passes, loss and accuracy sums, and the same
// Adam update over one flat parameter buffer), so a memopt epoch within 2x of this one
// means the library's abstractions cost little. It trains for real and reports its test
// accuracy, which shows the products are the right ones.
//
//   eigen_floor [--epochs N] [--data DIR] [--batch N] [--seed N] [--subnormals 0|1]
//
// Output lines match examples/01_fashion_mnist so that benchmarks/compare/run.sh reads
// both the same way: `Epoch N/M - S steps - T s - loss: L - accuracy: A`, then
// `test_accuracy=A`.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <zlib.h>
#include <Eigen/Core>
#if defined(__SSE3__)
#include <pmmintrin.h>
#endif

namespace {

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic>;
using Map = Eigen::Map<Matrix>;
using ConstMap = Eigen::Map<const Matrix>;
using Vector = Eigen::VectorXf;
using VectorMap = Eigen::Map<Eigen::VectorXf>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;

constexpr Eigen::Index kIn = 784, kHidden = 128, kOut = 10;

struct Options {
  int epochs = 3;
  std::string data = "/usr/share/datasets/fashion-mnist";
  Eigen::Index batch = 32;
  unsigned seed = 42;
  bool subnormals = false;  // --subnormals 1 keeps IEEE subnormals (slow Adam)
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    if (flag == "--epochs")
      o.epochs = std::atoi(value);
    else if (flag == "--data")
      o.data = value;
    else if (flag == "--batch")
      o.batch = std::atoi(value);
    else if (flag == "--seed")
      o.seed = static_cast<unsigned>(std::atoi(value));
    else if (flag == "--subnormals")
      o.subnormals = std::atoi(value) != 0;
    else
      throw std::runtime_error("unknown flag " + std::string(flag) +
                               "; usage: eigen_floor [--epochs N] [--data DIR] [--batch N] "
                               "[--seed N] [--subnormals 0|1]");
  }
  if ((argc - 1) % 2 != 0) throw std::runtime_error("a flag lacks its value");
  if (o.epochs < 1 || o.batch < 1) throw std::runtime_error("--epochs and --batch must be > 0");
  return o;
}

// The whole decompressed content of a .gz file.
std::vector<unsigned char> read_gz(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<unsigned char> out;
  unsigned char chunk[1 << 16];
  int n = 0;
  while ((n = gzread(f, chunk, sizeof chunk)) > 0) out.insert(out.end(), chunk, chunk + n);
  gzclose(f);
  if (n < 0) throw std::runtime_error("cannot decompress " + path);
  return out;
}

std::uint32_t big_endian(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) |
         std::uint32_t{p[3]};
}

// One split: features 784 x n (column c is sample c, pixels / 255) and labels.
struct Split {
  Matrix x;
  std::vector<int> y;
};

Split load(const std::string& dir, const char* prefix) {
  const auto images = read_gz(dir + "/" + prefix + "-images-idx3-ubyte.gz");
  const auto labels = read_gz(dir + "/" + prefix + "-labels-idx1-ubyte.gz");
  if (images.size() < 16 || big_endian(images.data()) != 2051 || labels.size() < 8 ||
      big_endian(labels.data()) != 2049)
    throw std::runtime_error(std::string("not IDX files: ") + prefix);
  const std::uint32_t n = big_endian(images.data() + 4);
  const std::uint32_t pixels = big_endian(images.data() + 8) * big_endian(images.data() + 12);
  if (pixels != kIn || big_endian(labels.data() + 4) != n || images.size() != 16 + n * pixels ||
      labels.size() != 8 + n)
    throw std::runtime_error(std::string("unexpected shapes in ") + prefix);
  Split s{Matrix(kIn, n), std::vector<int>(labels.begin() + 8, labels.end())};
  for (std::size_t j = 0; j < std::size_t{n} * pixels; ++j)
    s.x.data()[j] = static_cast<float>(images[16 + j]) / 255.0f;
  return s;
}

// Parameters in one flat buffer, as memopt lays them: kernel (units x inputs, column-major)
// then bias, per layer; gradients and Adam's two moments in the same layout.
struct Layout {
  static constexpr Eigen::Index w1 = 0, b1 = w1 + kHidden * kIn, w2 = b1 + kHidden,
                                b2 = w2 + kOut * kHidden, size = b2 + kOut;
};

class Floor {
 public:
  explicit Floor(unsigned seed, Eigen::Index batch)
      : p_(Vector::Zero(Layout::size)),
        g_(Vector::Zero(Layout::size)),
        m_(Vector::Zero(Layout::size)),
        v_(Vector::Zero(Layout::size)),
        h_(kHidden, batch),
        z_(kOut, batch),
        dh_(kHidden, batch) {
    // Keras's defaults: Glorot-uniform kernels, zero biases.
    std::mt19937 rng(seed);
    auto glorot = [&](Eigen::Index offset, Eigen::Index fan_in, Eigen::Index fan_out) {
      const float limit = std::sqrt(6.0f / static_cast<float>(fan_in + fan_out));
      std::uniform_real_distribution<float> u(-limit, limit);
      for (Eigen::Index j = 0; j < fan_in * fan_out; ++j) p_[offset + j] = u(rng);
    };
    glorot(Layout::w1, kIn, kHidden);
    glorot(Layout::w2, kHidden, kOut);
  }

  // One step on columns [first, first + rows) of `x`; adds to the loss and correct sums.
  void step(const Matrix& x, const std::vector<int>& y, Eigen::Index first, Eigen::Index rows) {
    const ConstMap xb(x.data() + first * kIn, kIn, rows);
    auto h = h_.leftCols(rows);
    auto z = z_.leftCols(rows);
    auto dh = dh_.leftCols(rows);

    h.noalias() = w1() * xb;
    h = (h.colwise() + b1()).cwiseMax(0.0f);
    z.noalias() = w2() * h;
    z.colwise() += b2();

    // Softmax and cross-entropy per sample; z becomes dLoss/dz = (p - onehot) / rows.
    const float inv_rows = 1.0f / static_cast<float>(rows);
    for (Eigen::Index c = 0; c < rows; ++c) {
      auto col = z.col(c);
      Eigen::Index best = 0;
      const float top = col.maxCoeff(&best);
      const int label = y[static_cast<std::size_t>(first + c)];
      correct_ += best == label ? 1 : 0;
      const float shifted_label = col[label] - top;
      col = (col.array() - top).exp();
      const float sum = col.sum();
      loss_ += std::log(sum) - shifted_label;
      col *= inv_rows / sum;
      col[label] -= inv_rows;
    }
    samples_ += rows;

    Map(g_.data() + Layout::w2, kOut, kHidden).noalias() = z * h.transpose();
    VectorMap(g_.data() + Layout::b2, kOut) = z.rowwise().sum();
    dh.noalias() = w2().transpose() * z;
    dh = (h.array() > 0.0f).select(dh, 0.0f);
    Map(g_.data() + Layout::w1, kHidden, kIn).noalias() = dh * xb.transpose();
    VectorMap(g_.data() + Layout::b1, kHidden) = dh.rowwise().sum();

    adam();
  }

  double accuracy(const Split& test) const {
    Matrix h = (w1() * test.x).colwise() + b1();
    h = h.cwiseMax(0.0f);
    const Matrix z = (w2() * h).colwise() + b2();
    Eigen::Index correct = 0;
    for (Eigen::Index c = 0; c < z.cols(); ++c) {
      Eigen::Index best = 0;
      z.col(c).maxCoeff(&best);
      correct += best == test.y[static_cast<std::size_t>(c)] ? 1 : 0;
    }
    return static_cast<double>(correct) / static_cast<double>(z.cols());
  }

  double take_loss() { return std::exchange(loss_, 0.0) / static_cast<double>(samples_); }
  double take_accuracy() {
    const double a = static_cast<double>(correct_) / static_cast<double>(samples_);
    correct_ = 0;
    samples_ = 0;
    return a;
  }

 private:
  ConstMap w1() const { return {p_.data() + Layout::w1, kHidden, kIn}; }
  ConstMap w2() const { return {p_.data() + Layout::w2, kOut, kHidden}; }
  Eigen::Map<const Vector> b1() const { return {p_.data() + Layout::b1, kHidden}; }
  Eigen::Map<const Vector> b2() const { return {p_.data() + Layout::b2, kOut}; }

  // Keras's Adam (lr 1e-3, beta_1 0.9, beta_2 0.999, epsilon 1e-7), bias correction folded
  // into the step size, over the flat buffer in one vectorised pass.
  void adam() {
    ++t_;
    const double lr = 1e-3, b1 = 0.9, b2 = 0.999;
    const auto alpha =
        static_cast<float>(lr * std::sqrt(1.0 - std::pow(b2, t_)) / (1.0 - std::pow(b1, t_)));
    ArrayMap p(p_.data(), Layout::size), m(m_.data(), Layout::size), v(v_.data(), Layout::size);
    const Eigen::Map<const Eigen::ArrayXf> g(g_.data(), Layout::size);
    m += (g - m) * (1.0f - 0.9f);
    v += (g.square() - v) * (1.0f - 0.999f);
    p -= alpha * m / (v.sqrt() + 1e-7f);
  }

  Vector p_, g_, m_, v_;
  Matrix h_, z_, dh_;
  double loss_ = 0;
  Eigen::Index correct_ = 0, samples_ = 0;
  double t_ = 0;
};

}  // namespace

int main(int argc, char** argv) try {
  const Options o = parse(argc, argv);
#if defined(__SSE3__)
  // Adam's moments of parameters whose gradient stays zero (border pixels that are black in
  // every image) decay into subnormal floats, which x86 processes about 100x slower; TensorFlow
  // flushes them to zero on its threads, and so does the floor.
  if (!o.subnormals) {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
  }
#endif
  const Split train = load(o.data, "train");
  const Split test = load(o.data, "t10k");
  Floor floor(o.seed, o.batch);
  const auto n = static_cast<Eigen::Index>(train.y.size());
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    const auto start = std::chrono::steady_clock::now();
    Eigen::Index steps = 0;
    for (Eigen::Index first = 0; first < n; first += o.batch, ++steps)
      floor.step(train.x, train.y, first, std::min(o.batch, n - first));
    // A validation pass on the test split inside the epoch's time, as memopt's example, Keras
    // and the PyTorch peer do.
    const double val_accuracy = floor.accuracy(test);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double loss = floor.take_loss();
    std::printf(
        "Epoch %d/%d - %ld steps - %.3fs - loss: %.4f - accuracy: %.4f - val_accuracy: %.4f\n",
        epoch + 1, o.epochs, static_cast<long>(steps), seconds, loss, floor.take_accuracy(),
        val_accuracy);
    std::fflush(stdout);
  }
  std::printf("test_accuracy=%.4f\n", floor.accuracy(test));
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "eigen_floor: %s\n", e.what());
  return 1;
}
