#pragma once
// data::detail::AsyncView: the worker-thread engine under prefetch and the parallel map.
//
// Worker threads read the upstream range in order, one at a time, into slots of a pool; with
// a function each worker then applies it to its element outside every lock. Slots queue in
// upstream order and reach the consumer in that order, whatever finishes first. A slot goes
// back to the pool when the consumer moves past it, so after warm-up nothing is allocated.

#include <algorithm>
#include <concepts>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <ranges>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "memopt/data/detail/element.hpp"
#include "memopt/data/pass.hpp"

namespace memopt::data::detail {

/// The function of a stage that only carries elements across to another thread (prefetch).
struct Identity {};

/// How an `AsyncView` runs: worker threads, elements buffered ahead of the consumer's, and
/// whether that depth tunes itself (then `depth` is where it starts).
struct AsyncConfig {
  std::size_t threads = 1;
  std::size_t depth = 1;
  bool autotune = false;
  std::size_t memory_cap = 0;
  std::size_t max_depth = 0;
};

// Elements cross to another thread as values the stage owns (`stored_t`, `owned_t`): a span
// into upstream's batch buffer, kept in a slot, would be read by the consumer while the worker
// refills that buffer, and a function's input is read after upstream has moved on.
template <class V, class F>
struct AsyncTypes {
  using input = stored_t<V>;
  // A function is called with an rvalue when it accepts one (so it may take a move-only
  // element by value), else with an lvalue.
  using call_arg = std::conditional_t<std::invocable<F&, input&&>, input&&, input&>;
  using value = owned_t<std::invoke_result_t<F&, call_arg>>;
};

template <class V>
struct AsyncTypes<V, Identity> {
  using input = stored_t<V>;
  using value = input;
};

/// The shared state of one `AsyncView`: the upstream view, the pool of slots, the workers.
/// It lives on the heap so that the view stays movable and workers keep a stable address.
template <class V, class F>
class AsyncState {
  static constexpr bool kIdentity = std::same_as<F, Identity>;
  using Input = typename AsyncTypes<V, F>::input;

 public:
  using Value = typename AsyncTypes<V, F>::value;

  struct Slot {
    std::optional<Value> value;
    std::exception_ptr error;
    Slot* next = nullptr;
    bool ready = false;
  };

  AsyncState(V base, F fn, AsyncConfig config)
      : base_(std::move(base)), fn_(std::move(fn)), config_(config), depth_(config.depth) {}

  AsyncState(const AsyncState&) = delete;
  AsyncState& operator=(const AsyncState&) = delete;

  ~AsyncState() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      running_ = false;
    }
    work_cv_.notify_all();
    // Joined here, before the slots and the upstream iterator they use are destroyed.
    workers_.clear();
  }

  const V& base() const noexcept { return base_; }
  const F& fn() const noexcept { return fn_; }
  const AsyncConfig& config() const noexcept { return config_; }

  std::size_t depth() const {
    std::lock_guard lock(mu_);
    return depth_;
  }

  /// Starts a pass and returns its id; a pass still running is ended first (its iterators
  /// then read as ended).
  std::uint64_t start() {
    std::unique_lock lock(mu_);
    if (running_) end_pass(lock);
    if (workers_.empty()) {
      add_slots(depth_ + 1, nullptr);
      workers_.reserve(config_.threads);
      for (std::size_t i = 0; i < config_.threads; ++i) workers_.emplace_back([this] { work(); });
    }
    ++pass_;
    // The workers start upstream's pass in the consumer's PassScope (fit's epoch).
    pass_scope_ = PassScope::current();
    running_ = true;
    source_done_ = false;
    throttled_ = false;
    consumed_ = 0;
    work_cv_.notify_all();
    return pass_;
  }

  /// Hands the consumer's slot back and returns the next element's slot, in upstream order;
  /// nullptr at the end of the pass (or for a pass that is no longer running). An error raised
  /// upstream or by the function is rethrown here, at the element it belongs to, and ends the
  /// pass.
  Slot* next(std::uint64_t pass) {
    std::unique_lock lock(mu_);
    if (pass != pass_ || !running_) return nullptr;
    if (held_ != nullptr) {
      push_free(held_);
      held_ = nullptr;
      work_cv_.notify_one();
    }
    bool waited = false;
    while (!(head_ != nullptr && head_->ready) && !(head_ == nullptr && source_done_)) {
      waited = true;
      waiting_ = true;
      done_cv_.wait(lock);
    }
    waiting_ = false;
    if (head_ == nullptr) {
      end_pass(lock);
      return nullptr;
    }
    Slot* slot = head_;
    head_ = slot->next;
    if (head_ == nullptr) tail_ = nullptr;
    --in_flight_;
    work_cv_.notify_one();
    if (slot->error) {
      std::exception_ptr error = std::exchange(slot->error, nullptr);
      push_free(slot);
      end_pass(lock);
      std::rethrow_exception(error);
    }
    held_ = slot;
    if (config_.autotune) tune(lock, waited);
    ++consumed_;
    return slot;
  }

  /// Ends pass `pass` if it is still running: the early exit of a loop (break, exception).
  /// Returns once no worker touches the upstream range any more.
  void finish(std::uint64_t pass) noexcept {
    std::unique_lock lock(mu_);
    if (pass == pass_ && running_) end_pass(lock);
  }

 private:
  void push_free(Slot* slot) noexcept {
    slot->ready = false;
    slot->next = free_;
    free_ = slot;
  }

  // New slots are warmed with a copy of `model` where there is one, so that their first fill
  // allocates nothing.
  void add_slots(std::size_t total, const Value* model) {
    while (slots_.size() < total) {
      auto slot = std::make_unique<Slot>();
      if constexpr (std::copy_constructible<Value>) {
        if (model != nullptr) slot->value.emplace(*model);
      }
      push_free(slot.get());
      slots_.push_back(std::move(slot));
    }
  }

  // With mu_ held: stops the workers claiming, waits for those at work, takes every slot
  // back, and lets go of the upstream iterator (which ends an upstream pass in turn). No
  // worker can touch the iterator then: it is touched only between a claim and busy_'s
  // decrement, and nothing is claimed while running_ is false.
  void end_pass(std::unique_lock<std::mutex>& lock) noexcept {
    running_ = false;
    done_cv_.wait(lock, [this] { return busy_ == 0; });
    while (head_ != nullptr) {
      Slot* slot = head_;
      head_ = slot->next;
      slot->error = nullptr;
      push_free(slot);
    }
    tail_ = nullptr;
    if (held_ != nullptr) push_free(held_);
    held_ = nullptr;
    in_flight_ = 0;
    it_.reset();
  }

  // Autotune, with mu_ held and the consumer on a fresh element. The first element sets the
  // depth limit from the memory cap and reserves (and warms) a slot for every depth up to it,
  // so that growing allocates nothing; later, a wait while the worker had been held back by
  // the depth doubles the depth (a producer that is simply slower gains nothing from more).
  void tune(std::unique_lock<std::mutex>&, bool waited) {
    if (!sized_) {
      sized_ = true;
      const std::size_t bytes = std::max<std::size_t>(1, element_bytes(*held_->value));
      const std::size_t slots = config_.memory_cap / bytes;
      max_depth_ = std::clamp(slots > 1 ? slots - 1 : std::size_t{1}, depth_,
                              std::max(depth_, config_.max_depth));
      add_slots(max_depth_ + 1, &*held_->value);
    }
    if (!waited || consumed_ == 0 || !throttled_ || depth_ >= max_depth_) return;
    depth_ = std::min(max_depth_, depth_ * 2);
    throttled_ = false;
    work_cv_.notify_all();
  }

  void work() {
    // A function's worker keeps its input here while the function runs: assigned, not
    // rebuilt, from one element to the next.
    [[maybe_unused]] std::optional<std::conditional_t<kIdentity, char, Input>> input;
    std::unique_lock lock(mu_);
    for (;;) {
      for (;;) {
        if (stop_) return;
        if (running_ && !source_done_) {
          if (in_flight_ < depth_ && free_ != nullptr) break;
          // Held back by the depth while the consumer is busy elsewhere (a consumer already
          // waiting takes the queued element at once: that is no reason to grow).
          if (!waiting_) throttled_ = true;
        }
        work_cv_.wait(lock);
      }
      Slot* slot = free_;
      free_ = slot->next;
      slot->next = nullptr;
      ++in_flight_;
      ++busy_;
      const std::uint64_t pass = pass_;
      const std::optional<std::uint64_t> scope = pass_scope_;
      lock.unlock();

      // Upstream is read by one worker at a time, in order; mu_ is taken inside up_mu_ to
      // queue the slot, so the queue's order is upstream's.
      std::unique_lock up(up_mu_);
      const bool have = read_upstream(pass, scope, *slot, input);
      lock.lock();
      if (pass != pass_ || !running_) {
        // The pass was ended meanwhile: end_pass is waiting for busy_ to reach 0.
        push_free(slot);
        --in_flight_;
        --busy_;
        done_cv_.notify_all();
        continue;
      }
      if (!have && !slot->error) {
        source_done_ = true;
        push_free(slot);
        --in_flight_;
        --busy_;
        done_cv_.notify_all();
        continue;
      }
      if (tail_ != nullptr)
        tail_->next = slot;
      else
        head_ = slot;
      tail_ = slot;
      if (slot->error) source_done_ = true;
      if constexpr (!kIdentity) {
        if (!slot->error) {
          lock.unlock();
          up.unlock();
          try {
            store(slot->value, call(*input));
          } catch (...) {
            slot->error = std::current_exception();
          }
          lock.lock();
        }
      }
      warm(*slot);
      slot->ready = true;
      --busy_;
      done_cv_.notify_all();
    }
  }

  // With up_mu_ held: the next element of pass `pass` into the slot (or into `input` for a
  // function). False at the end of the pass or on an error, which goes into the slot.
  // Upstream moves past an element only when the next one is wanted, so the worker reads no
  // more than `depth` elements ahead (moving a batch or shuffle upstream reads), and an error
  // raised while moving past element k belongs to element k + 1.
  template <class In>
  bool read_upstream(std::uint64_t pass, std::optional<std::uint64_t> scope, Slot& slot,
                     std::optional<In>& input) {
    const PassScope named(scope);
    try {
      if (it_pass_ != pass) {
        it_.reset();
        it_pass_ = pass;
        advance_ = false;
        it_.emplace(std::ranges::begin(base_));
      }
      if (!it_.has_value()) return false;
      if (advance_) {
        advance_ = false;
        ++*it_;
      }
      if (*it_ == std::ranges::end(base_)) {
        it_.reset();
        return false;
      }
      if constexpr (kIdentity) {
        store(slot.value, take_element<V>(*it_));
      } else {
        store(input, take_element<V>(*it_));
      }
      advance_ = true;
      return true;
    } catch (...) {
      slot.error = std::current_exception();
      it_.reset();
      return false;
    }
  }

  template <class In>
  decltype(auto) call(In& in) {
    if constexpr (std::invocable<F&, In&&>) {
      return std::invoke(fn_, std::move(in));
    } else {
      return std::invoke(fn_, in);
    }
  }

  // With mu_ held, on the first element ever: every free slot gets a copy, so that refilling
  // them later allocates nothing (vectors keep their capacity when assigned to).
  void warm(const Slot& slot) {
    if constexpr (std::copy_constructible<Value>) {
      if (warmed_ || slot.error) return;
      warmed_ = true;
      for (Slot* s = free_; s != nullptr; s = s->next) {
        if (!s->value.has_value()) s->value.emplace(*slot.value);
      }
    }
  }

  // Read by workers under up_mu_; by the consumer only through const size queries.
  V base_;
  F fn_;
  const AsyncConfig config_;

  // Guarded by up_mu_ (and by mu_ with no pass running, see end_pass).
  std::mutex up_mu_;
  std::optional<std::ranges::iterator_t<V>> it_;
  std::uint64_t it_pass_ = 0;
  bool advance_ = false;

  // Guarded by mu_.
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // workers wait here for a pass and a free slot
  std::condition_variable done_cv_;  // the consumer waits here for an element or idle workers
  std::vector<std::unique_ptr<Slot>> slots_;
  Slot* free_ = nullptr;
  Slot* head_ = nullptr;  // queue of claimed slots in upstream order
  Slot* tail_ = nullptr;
  Slot* held_ = nullptr;  // the consumer's element
  std::size_t depth_;
  std::size_t max_depth_ = 0;
  std::size_t in_flight_ = 0;  // claimed slots the consumer has not taken yet
  std::size_t busy_ = 0;       // workers between a claim and its publication
  std::size_t consumed_ = 0;
  std::uint64_t pass_ = 0;
  std::optional<std::uint64_t> pass_scope_;  // the PassScope of the thread that started it
  bool running_ = false;
  bool source_done_ = false;
  bool throttled_ = false;
  bool waiting_ = false;  // the consumer is blocked in next()
  bool stop_ = false;
  bool warmed_ = false;
  bool sized_ = false;

  // Last: destroyed (joined) first.
  std::vector<std::jthread> workers_;
};

/// A view whose elements are produced ahead of the consumer by worker threads: `prefetch`
/// (the function is `Identity`) and `map(fn, threads)`. Elements arrive in upstream order;
/// each is a mutable lvalue in a pooled slot, valid until the iterator moves on, so the view
/// hands its elements over. It is an input range whose iterator is move-only: the iterator
/// owns the pass, and destroying it (leaving a loop by `break` or an exception) ends the pass
/// and waits until no worker touches the upstream range. `begin()` again starts a new pass
/// with the same threads and slots.
template <std::ranges::view V, class F>
class AsyncView : public std::ranges::view_interface<AsyncView<V, F>> {
  using State = AsyncState<V, F>;
  using Slot = typename State::Slot;

 public:
  using value_type = typename State::Value;
  static constexpr bool hands_over_elements = true;

  class Iterator {
   public:
    using iterator_concept = std::input_iterator_tag;
    using value_type = AsyncView::value_type;
    using difference_type = std::ptrdiff_t;

    Iterator() = default;
    Iterator(State* state, std::uint64_t pass) noexcept : state_(state), pass_(pass) {}
    Iterator(Iterator&& other) noexcept
        : state_(std::exchange(other.state_, nullptr)),
          pass_(other.pass_),
          slot_(std::exchange(other.slot_, nullptr)) {}
    Iterator& operator=(Iterator&& other) noexcept {
      if (this != &other) {
        release();
        state_ = std::exchange(other.state_, nullptr);
        pass_ = other.pass_;
        slot_ = std::exchange(other.slot_, nullptr);
      }
      return *this;
    }
    Iterator(const Iterator&) = delete;
    Iterator& operator=(const Iterator&) = delete;
    ~Iterator() { release(); }

    value_type& operator*() const noexcept { return *slot_->value; }

    Iterator& operator++() {
      // Cleared first: if next() throws, the iterator reads as ended.
      slot_ = nullptr;
      slot_ = state_->next(pass_);
      return *this;
    }
    void operator++(int) { ++*this; }

    friend bool operator==(const Iterator& it, std::default_sentinel_t) noexcept {
      return it.slot_ == nullptr;
    }

   private:
    void release() noexcept {
      if (state_ != nullptr) state_->finish(pass_);
      state_ = nullptr;
      slot_ = nullptr;
    }

    State* state_ = nullptr;
    std::uint64_t pass_ = 0;
    Slot* slot_ = nullptr;
  };

  AsyncView(V base, F fn, AsyncConfig config)
      : state_(std::make_unique<State>(std::move(base), std::move(fn), config)) {}

  // A copy is a new pipeline over a copy of the upstream view: its own workers and slots.
  AsyncView(
      const AsyncView& other) requires std::copy_constructible<V> && std::copy_constructible<F>
      : state_(std::make_unique<State>(other.state_->base(), other.state_->fn(),
                                       other.state_->config())) {}
  AsyncView& operator=(
      const AsyncView& other) requires std::copy_constructible<V> && std::copy_constructible<F> {
    if (this != &other) *this = AsyncView(other);
    return *this;
  }
  AsyncView(AsyncView&&) noexcept = default;
  AsyncView& operator=(AsyncView&&) noexcept = default;
  ~AsyncView() = default;

  /// Starts a pass (waking the workers, started on the first pass) and waits for its first
  /// element.
  Iterator begin() {
    Iterator it(state_.get(), state_->start());
    ++it;
    return it;
  }
  std::default_sentinel_t end() const noexcept { return std::default_sentinel; }

  /// As many elements as the upstream view, when it knows.
  auto size() const requires ConstSized<V> { return std::ranges::size(state_->base()); }

  /// Elements the workers may hold ahead of the consumer now (autotune changes it).
  std::size_t depth() const { return state_->depth(); }

 private:
  std::unique_ptr<State> state_;
};

}  // namespace memopt::data::detail
