#pragma once
// memopt: neural networks as types, planned at compile time.
//
// ```cpp
// #include <memopt/memopt.hpp>
// namespace mo = memopt;
// using Net = mo::Sequential<mo::Dense<128, mo::ReLU>, mo::Dense<10, mo::Softmax>>;
// auto model = mo::Model<Net, mo::Input<784>, mo::mixed_float16>{42};
// ```
//
// The image API (image_directory, decoding, resizing, image_cache) is <memopt/images.hpp>,
// which includes this header and needs the CMake target memopt::images. Include
// <memopt/backend/cuda.hpp> as well, in a CUDA translation unit, for mo::cuda. A program that
// only plans (ModelPlan, no backend, no data) needs <memopt/core.hpp> alone.

#include "memopt/backend/cpu.hpp"
#include "memopt/core.hpp"
#include "memopt/core/backend.hpp"
#include "memopt/core/dtype.hpp"
#include "memopt/core/error.hpp"
#include "memopt/core/policy.hpp"
#include "memopt/data/any_batches.hpp"
#include "memopt/data/autotune.hpp"
#include "memopt/data/batch.hpp"
#include "memopt/data/cache.hpp"
#include "memopt/data/dataset.hpp"
#include "memopt/data/fashion_mnist.hpp"
#include "memopt/data/filter.hpp"
#include "memopt/data/from.hpp"
#include "memopt/data/from_csv.hpp"
#include "memopt/data/from_idx.hpp"
#include "memopt/data/generate.hpp"
#include "memopt/data/map.hpp"
#include "memopt/data/one_hot.hpp"
#include "memopt/data/pass.hpp"
#include "memopt/data/prefetch.hpp"
#include "memopt/data/range.hpp"
#include "memopt/data/repeat.hpp"
#include "memopt/data/sample.hpp"
#include "memopt/data/shard.hpp"
#include "memopt/data/shuffle.hpp"
#include "memopt/data/skip.hpp"
#include "memopt/data/static_batch.hpp"
#include "memopt/data/take.hpp"
#include "memopt/data/target_batch.hpp"
#include "memopt/data/target_dataset.hpp"
#include "memopt/distributed/communicator.hpp"
#include "memopt/distributed/communicator_ref.hpp"
#include "memopt/distributed/local_communicator.hpp"
#include "memopt/io/safetensors.hpp"
#include "memopt/layers.hpp"
#include "memopt/model/input.hpp"
#include "memopt/model/model.hpp"
#include "memopt/model/sequential.hpp"
#include "memopt/model/spec.hpp"
#include "memopt/plan/fusion.hpp"
#include "memopt/plan/memory_budget.hpp"
#include "memopt/plan/report.hpp"
#include "memopt/plan/step_plans.hpp"
#include "memopt/plan/timeline_image.hpp"
#include "memopt/plan/timeline_svg.hpp"
#include "memopt/train/any_optimizer.hpp"
#include "memopt/train/callback.hpp"
#include "memopt/train/callbacks/backup_and_restore.hpp"
#include "memopt/train/callbacks/csv_logger.hpp"
#include "memopt/train/callbacks/early_stopping.hpp"
#include "memopt/train/callbacks/learning_rate_scheduler.hpp"
#include "memopt/train/callbacks/model_checkpoint.hpp"
#include "memopt/train/callbacks/monitor.hpp"
#include "memopt/train/callbacks/progress_bar.hpp"
#include "memopt/train/callbacks/reduce_lr_on_plateau.hpp"
#include "memopt/train/callbacks/tensorboard.hpp"
#include "memopt/train/callbacks/terminate_on_nan.hpp"
#include "memopt/train/checkpoint.hpp"
#include "memopt/train/history.hpp"
#include "memopt/train/loss_scale.hpp"
#include "memopt/train/losses.hpp"
#include "memopt/train/metrics.hpp"
#include "memopt/train/optimizers.hpp"
