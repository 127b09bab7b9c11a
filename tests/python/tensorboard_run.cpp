// The C++ half of the TensorBoard test (test_tensorboard.py drives it): trains a small model
// with callbacks::TensorBoard and writes, beside the logs, what memopt says it logged.
//
//   memopt_tensorboard_run LOG_DIR EXPECTED       trains 4 epochs; EXPECTED gets lines
//       scalar RUN TAG STEP VALUE                 (RUN: train or validation)
//       histo TAG STEP NUM MIN MAX SUM
//       image TAG STEP WIDTH HEIGHT               (the memory timeline)
//       pixel X Y R G B                           (the middle of each buffer's rectangle)
//     and EXPECTED.summary the model's summary text
//   memopt_tensorboard_run LOG_DIR EXPECTED kill  the same, killed (SIGKILL) as epoch 2 begins
//
// Values travel as text with 17 significant digits (every double round-trips).

#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <memopt/memopt.hpp>

#include "../unit/blobs.hpp"

namespace mo = memopt;
namespace fs = std::filesystem;

namespace {

using Net =
    mo::Sequential<mo::Dense<16, mo::ReLU>, mo::BatchNormalization, mo::Dense<4, mo::Softmax>>;
using Model = mo::Model<Net, mo::Input<8>>;

constexpr int update_freq = 3;

// Runs after TensorBoard in the callback list: sees the logs and weights it saw.
struct Recorder : mo::Callback {
  std::ofstream out;
  bool kill_at_epoch_2 = false;
  std::int64_t global_batch = 0;
  fs::path summary_path;

  void line(const std::string& head, double v) {
    char buf[40];
    std::snprintf(buf, sizeof buf, " %.17g", v);
    out << head << buf << '\n';
  }

  void on_epoch_begin(int epoch, const mo::Logs&) override {
    if (kill_at_epoch_2 && epoch == 2) {
      out.flush();
      ::raise(SIGKILL);  // as a preempted job: no destructors, no flush of anything else
    }
  }
  void on_train_batch_begin(int) override { ++global_batch; }
  void on_train_batch_end(int, const mo::BatchLogs& logs) override {
    // The summary as TensorBoard's callback wrote it, after the first batch.
    if (global_batch == 1) {
      std::ofstream(summary_path) << model_->summary_text();
      // The timeline the callback drew from the plan fit prepared, and where each buffer is.
      const mo::plan::MemoryReport r = model_->fit_memory_report();
      const mo::plan::TimelineImage im = mo::plan::memory_timeline_image(r);
      out << "image memory/timeline 0 " << im.width << ' ' << im.height << '\n';
      for (const mo::plan::BufferReport& b : r.buffers) {
        const int x = (im.column_of(static_cast<std::size_t>(b.first)) +
                       im.column_of(static_cast<std::size_t>(b.last) + 1)) /
                      2;
        const int y = (im.row_of(b.offset) + im.row_of(b.offset + mo::plan::align_up(b.bytes))) / 2;
        if (std::abs(y - im.row_of(r.lower_bound_bytes)) <= 2) continue;  // under the dashes
        const auto c = mo::plan::role_rgb(b.role);
        out << "pixel " << x << ' ' << y << ' ' << int(c[0]) << ' ' << int(c[1]) << ' ' << int(c[2])
            << '\n';
      }
    }
    if (global_batch % update_freq != 0) return;
    const std::string step = std::to_string(global_batch);
    line("scalar train batch_loss " + step, logs.loss);
    line("scalar train batch_accuracy " + step, logs.accuracy);
  }
  void on_epoch_end(int epoch, const mo::Logs& logs) override {
    const std::string step = std::to_string(epoch);
    for (const auto& [k, v] : logs) {
      if (k.starts_with("val_"))
        line("scalar validation epoch_" + k.substr(4) + " " + step, v);
      else
        line("scalar train epoch_" + k + " " + step, v);
    }
    line("scalar train epoch_learning_rate " + step, model_->learning_rate());
    const mo::MemoryFigures m = model_->memory_figures();
    line("scalar train memory/arena_bytes " + step, double(m.arena_bytes));
    line("scalar train memory/workspace_bytes " + step, double(m.workspace_bytes));
    for (const mo::NamedWeights& w : model_->named_weights()) {
      double sum = 0;
      for (float v : w.values) sum += v;
      const auto [lo, hi] = std::minmax_element(w.values.begin(), w.values.end());
      char buf[160];
      std::snprintf(buf, sizeof buf, " %zu %.17g %.17g %.17g", w.values.size(), double(*lo),
                    double(*hi), sum);
      out << "histo " << w.name << "/histogram " << step << buf << '\n';
    }
    out.flush();
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s LOG_DIR EXPECTED [kill]\n", argv[0]);
    return 2;
  }
  const fs::path log_dir = argv[1];
  const fs::path expected = argv[2];
  Model model{5};
  model.compile(mo::Adam{{.learning_rate = mo::ExponentialDecay{{.initial_learning_rate = 0.02,
                                                                 .decay_steps = 10,
                                                                 .decay_rate = 0.5}}}},
                mo::SparseCategoricalCrossentropy{}, mo::metrics::Accuracy{});
  const auto train = mo::testing::blobs(200, 1);
  const auto val = mo::testing::blobs(64, 2);

  mo::callbacks::TensorBoard tb{
      {.log_dir = log_dir, .histogram_freq = 1, .update_freq = update_freq}};
  Recorder rec;
  rec.out.open(expected);
  rec.kill_at_epoch_2 = argc > 3 && std::string(argv[3]) == "kill";
  rec.summary_path = expected.string() + ".summary";
  model.fit(train | mo::data::batch(32), {.epochs = 4,
                                          .validation_data = val | mo::data::batch(32),
                                          .callbacks = {&tb, &rec},
                                          .verbose = 0});
  return 0;
}
