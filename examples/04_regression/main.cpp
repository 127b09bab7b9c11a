// Regression on a real tabular data set: scikit-learn's "diabetes" (442 patients, 10
// measurements each, and a score of disease progression one year later). An MLP of two
// hidden layers is trained with MeanSquaredError, AdamW and a CosineDecay learning rate, and
// reports its mean absolute error on a held-out fifth of the rows, in the score's own units.
//
//   bash scripts/fetch-diabetes.sh        # once: writes data/diabetes/
//   regression [DATA_DIR] [--epochs N] [--batch N] [--seed N] [--learning-rate X]
//              [--weight-decay X] [--policy float32|mixed_float16|mixed_bfloat16]
//
// DATA_DIR holds diabetes_data_raw.csv.gz and diabetes_target.csv.gz (default: Debian's
// python3-sklearn copy when installed, else data/diabetes). Missing files: exit status 2. The
// last line printed is `val_mae=<mean absolute error on the validation rows>`.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <Eigen/Dense>
#include <memopt/memopt.hpp>

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kFeatures = 10;

using Net = mo::Sequential<mo::Dense<64, mo::ReLU>, mo::Dense<64, mo::ReLU>, mo::Dense<1>>;

struct Options {
  std::string data;
  std::string policy = "float32";
  int epochs = 200;
  std::size_t batch = 32;
  std::uint64_t seed = 42;
  double learning_rate = 1e-3;
  double weight_decay = 1.0;  // chosen on seeds 1-6 (see README.md); Keras: 0.004
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(
      stderr,
      "%s\nusage: regression [DATA_DIR] [--epochs N] [--batch N] [--seed N] [--learning-rate "
      "X] [--weight-decay X] [--policy float32|mixed_float16|mixed_bfloat16]\n",
      why);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  const fs::path debian = "/usr/lib/python3/dist-packages/sklearn/datasets/data";
  o.data = fs::exists(debian / "diabetes_data_raw.csv.gz") ? debian.string() : "data/diabetes";
  bool have_data = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view flag = argv[i];
    if (!flag.starts_with("--")) {
      if (have_data) usage("more than one DATA_DIR");
      o.data = flag;
      have_data = true;
      continue;
    }
    if (i + 1 >= argc) usage("missing value");
    const std::string value = argv[++i];
    if (flag == "--epochs")
      o.epochs = std::atoi(value.c_str());
    else if (flag == "--learning-rate")
      o.learning_rate = std::atof(value.c_str());
    else if (flag == "--weight-decay")
      o.weight_decay = std::atof(value.c_str());
    else if (flag == "--policy")
      o.policy = value;
    else if (flag == "--batch")
      o.batch = static_cast<std::size_t>(std::atol(value.c_str()));
    else if (flag == "--seed")
      o.seed = std::strtoull(value.c_str(), nullptr, 10);
    else
      usage("unknown flag");
  }
  if (o.epochs < 1 || o.batch < 1) usage("--epochs and --batch must be positive");
  return o;
}

// Mean and (population) standard deviation of column `c` of `rows` rows of `width` values.
struct Moments {
  double mean = 0;
  double stddev = 1;
};
Moments moments(std::span<const float> values, std::size_t width, std::size_t c) {
  const std::size_t rows = values.size() / width;
  double sum = 0, squares = 0;
  for (std::size_t r = 0; r < rows; ++r) sum += values[r * width + c];
  const double mean = sum / static_cast<double>(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const double d = values[r * width + c] - mean;
    squares += d * d;
  }
  const double stddev = std::sqrt(squares / static_cast<double>(rows));
  return {mean, stddev > 0 ? stddev : 1.0};  // a constant column stays as it is, centred
}

void standardize(std::vector<float>& values, std::size_t width, std::size_t c, Moments m) {
  for (std::size_t i = c; i < values.size(); i += width)
    values[i] = static_cast<float>((values[i] - m.mean) / m.stddev);
}

// Two baselines on the same split, in the score's units: always predicting the training mean,
// and ordinary least squares (an intercept and one weight a feature, fitted by QR).
void print_baselines(std::span<const float> x_train, std::span<const float> y_train,
                     std::span<const float> x_val, std::span<const float> y_val) {
  const auto rows = [](std::span<const float> x) {
    const auto n = static_cast<Eigen::Index>(x.size() / kFeatures);
    Eigen::MatrixXd m(n, kFeatures + 1);
    m.col(0).setOnes();
    for (Eigen::Index r = 0; r < n; ++r)
      for (Eigen::Index c = 0; c < static_cast<Eigen::Index>(kFeatures); ++c)
        m(r, c + 1) = x[static_cast<std::size_t>(r) * kFeatures + static_cast<std::size_t>(c)];
    return m;
  };
  const auto column = [](std::span<const float> y) {
    return Eigen::Map<const Eigen::VectorXf>(y.data(), static_cast<Eigen::Index>(y.size()))
        .cast<double>()
        .eval();
  };
  const Eigen::VectorXd yt = column(y_train), yv = column(y_val);
  const double mean_mae = (yv.array() - yt.mean()).abs().mean();
  const Eigen::VectorXd w = rows(x_train).colPivHouseholderQr().solve(yt);
  const double linear_mae = (rows(x_val) * w - yv).array().abs().mean();
  std::printf("baselines: training mean val_mae=%.2f, least squares val_mae=%.2f\n", mean_mae,
              linear_mae);
}

template <class Policy>
int run(const Options& o) {
  const fs::path x_path = fs::path(o.data) / "diabetes_data_raw.csv.gz";
  const fs::path y_path = fs::path(o.data) / "diabetes_target.csv.gz";
  if (!fs::exists(x_path) || !fs::exists(y_path)) {
    std::fprintf(stderr,
                 "regression: no diabetes data in '%s'\n"
                 "run `bash scripts/fetch-diabetes.sh` (writes data/diabetes) or pass the folder "
                 "that holds diabetes_data_raw.csv.gz and diabetes_target.csv.gz\n",
                 o.data.c_str());
    return 2;
  }
  // Space-separated, no header, unscaled: age, sex, bmi, bp, s1..s6.
  const auto all = mo::data::from_csv(x_path, y_path, {.delimiter = ' '});
  if (all.width() != kFeatures || all.target_width() != 1)
    throw mo::error("expected 10 features and 1 target a row in " + o.data);

  // A fixed shuffle of the row indices (the same on every platform for a seed), then 80% for
  // training and the rest for validation.
  const auto n = static_cast<std::ptrdiff_t>(all.size());
  std::vector<std::size_t> order;
  for (const std::ptrdiff_t i : mo::data::range(n) | mo::data::shuffle(n, o.seed))
    order.push_back(static_cast<std::size_t>(i));
  const std::size_t n_train = all.size() * 4 / 5;
  std::vector<float> x_train, y_train, x_val, y_val;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const mo::data::TargetSample row = all[order[k]];
    auto& x = k < n_train ? x_train : x_val;
    auto& y = k < n_train ? y_train : y_val;
    x.insert(x.end(), row.features.begin(), row.features.end());
    y.insert(y.end(), row.targets.begin(), row.targets.end());
  }

  // Features on comparable scales (age in years beside cholesterol in mg/dL), with statistics
  // of the training rows only, so nothing of the validation rows leaks into training.
  for (std::size_t c = 0; c < kFeatures; ++c) {
    const Moments m = moments(x_train, kFeatures, c);
    standardize(x_train, kFeatures, c, m);
    standardize(x_val, kFeatures, c, m);
  }
  print_baselines(x_train, y_train, x_val, y_val);  // targets still in the score's units

  // The target too (mean 152, std 77): the output layer then starts near the right scale.
  // An absolute error in these units times target.stddev is one in the score's units.
  const Moments target = moments(y_train, 1, 0);
  std::vector<float> y_val_raw = y_val;
  standardize(y_train, 1, 0, target);
  standardize(y_val, 1, 0, target);
  std::printf("%zu training rows, %zu validation rows; target mean %.1f, std %.1f\n", n_train,
              all.size() - n_train, target.mean, target.stddev);

  auto train = mo::data::from(std::move(x_train), std::move(y_train), kFeatures, 1);
  auto val = mo::data::from(std::move(x_val), std::move(y_val), kFeatures, 1);

  auto model = mo::Model<Net, mo::Input<kFeatures>, Policy, mo::cpu>{o.seed};
  const auto steps_per_epoch = static_cast<std::int64_t>((train.size() + o.batch - 1) / o.batch);
  // One cosine from --learning-rate to 0 over the whole run: large steps first, fine ones at the
  // end.
  const mo::AdamW optimizer{{.learning_rate = mo::CosineDecay{{
                                 .initial_learning_rate = o.learning_rate,
                                 .decay_steps = steps_per_epoch * o.epochs,
                             }},
                             .weight_decay = o.weight_decay}};
  // mean_absolute_error in the epoch lines is in standardized units, as the loss; val_mae at
  // the end is in the score's own.
  model.compile(optimizer, mo::MeanSquaredError{}, mo::metrics::MeanAbsoluteError{});
  model.summary(o.batch);

  model.fit(train | mo::data::shuffle(train.size(), o.seed) | mo::data::batch(o.batch),
            {.epochs = o.epochs, .validation_data = val | mo::data::batch(256), .verbose = 2});

  // The validation error in the score's units, from the predictions themselves.
  const std::vector<float> predicted = model.predict(val.features());
  double absolute = 0;
  for (std::size_t i = 0; i < predicted.size(); ++i)
    absolute += std::fabs(predicted[i] * target.stddev + target.mean - y_val_raw[i]);
  std::printf("val_mae=%.2f\n", absolute / static_cast<double>(predicted.size()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  try {
    if (o.policy == "float32") return run<mo::float32>(o);
    if (o.policy == "mixed_float16") return run<mo::mixed_float16>(o);
    if (o.policy == "mixed_bfloat16") return run<mo::mixed_bfloat16>(o);
    usage("unknown --policy");
  } catch (const mo::error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
