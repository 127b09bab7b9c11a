#pragma once
// callbacks::CSVLogger: one row of logs per epoch in a CSV file, as Keras's.

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "memopt/core/error.hpp"
#include "memopt/io/detail/atomic_file.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/history.hpp"

namespace memopt::callbacks {

/// Keras's `CSVLogger`: a header `epoch,accuracy,loss,val_accuracy,val_loss` (the first
/// epoch's keys, sorted, with `val_` columns added when there was no validation), then a row
/// per epoch (0-based, as Keras), flushed as it is written. Values are written in their
/// shortest exact form, as Python's `str(float)`.
///
/// ```cpp
/// mo::callbacks::CSVLogger csv{{.filename = "training.csv", .append = true}};
/// model.fit(batches, {.epochs = 10, .callbacks = {&csv}});
/// ```
class CSVLogger : public Callback {
 public:
  struct Options {
    std::filesystem::path filename;
    char separator = ',';
    /// Append to an existing file (no second header) instead of replacing it.
    bool append = false;
  };

  explicit CSVLogger(Options o) : o_(std::move(o)) {
    if (o_.filename.empty()) throw error("CSVLogger: expected a filename, found \"\"");
  }
  CSVLogger(const CSVLogger&) = delete;
  CSVLogger& operator=(const CSVLogger&) = delete;
  ~CSVLogger() override { close(); }

  void on_train_begin(const Logs& /*logs*/) override {
    close();
    if (model_ && !model_->is_chief()) return;  // data parallelism: rank 0 alone logs
    write_header_ = true;
    if (o_.append) {
      std::error_code ec;
      write_header_ = !(std::filesystem::exists(o_.filename, ec) &&
                        std::filesystem::file_size(o_.filename, ec) > 0 && !ec);
    }
    file_ = std::fopen(o_.filename.c_str(), o_.append ? "a" : "w");
    if (!file_)
      throw error("CSVLogger: cannot open " + o_.filename.string() + ": " +
                  io::detail::errno_message(errno));
    keys_.clear();
  }

  void on_epoch_end(int epoch, const Logs& logs) override {
    if (!file_) return;
    if (keys_.empty()) {
      for (const auto& [k, v] : logs) keys_.push_back(k);  // a std::map: already sorted
      bool has_validation = false;
      for (const auto& k : keys_) has_validation = has_validation || k.starts_with("val_");
      if (!has_validation) {
        const std::size_t n = keys_.size();
        for (std::size_t i = 0; i < n; ++i) keys_.push_back("val_" + keys_[i]);
      }
      if (write_header_) {
        std::string header = "epoch";
        for (const auto& k : keys_) header += o_.separator + k;
        write(header + "\n");
      }
    }
    std::string row = std::to_string(epoch);
    for (const auto& k : keys_) {
      row += o_.separator;
      const auto it = logs.find(k);
      row += it == logs.end() ? std::string("NA") : number(it->second);
    }
    write(row + "\n");
  }

  void on_train_end(const Logs& /*logs*/) override { close(); }

 private:
  // Python's str(float): the shortest form that reads back exactly, with ".0" on whole numbers.
  static std::string number(double v) {
    std::string s = fmt::format("{}", v);
    if (s.find_first_of(".eni") == std::string::npos) s += ".0";
    return s;
  }

  void write(const std::string& s) {
    if (std::fwrite(s.data(), 1, s.size(), file_) != s.size() || std::fflush(file_) != 0)
      throw error("CSVLogger: cannot write " + o_.filename.string() + ": " +
                  io::detail::errno_message(errno));
  }

  void close() {
    if (file_) std::fclose(std::exchange(file_, nullptr));
  }

  Options o_;
  std::FILE* file_ = nullptr;
  std::vector<std::string> keys_;
  bool write_header_ = true;
};

}  // namespace memopt::callbacks
