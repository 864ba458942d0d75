// Internal to exec/: the queue a worker takes its ready ops from. Producers on other threads push; the owning
// worker pops, spinning briefly before it sleeps (a sleeping thread takes tens of microseconds to wake, which
// would add to every cross-device dependency).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace devplace::exec {

class ReadyQueue {
 public:
  void Push(int32_t item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      items_.push_back(item);
      size_.fetch_add(1, std::memory_order_release);
    }
    cv_.notify_one();
  }

  // The oldest item, or -1 once `abort` is set (call Wake after setting it).
  int32_t Pop(const std::atomic<bool>& abort) {
    const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    while (size_.load(std::memory_order_acquire) == 0 && !abort.load(std::memory_order_relaxed) &&
           std::chrono::steady_clock::now() < spin_until) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();  // busy-poll: the worker owns its core (yielding would hand it to other processes)
#else
      std::this_thread::yield();
#endif
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return !items_.empty() || abort.load(std::memory_order_relaxed); });
    if (items_.empty()) return -1;
    const int32_t item = items_.front();
    items_.pop_front();
    size_.fetch_sub(1, std::memory_order_relaxed);
    return item;
  }

  // Wakes a sleeping Pop (to notice an abort).
  void Wake() {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  }

  void Clear() {
    std::lock_guard<std::mutex> lock(mu_);
    items_.clear();
    size_.store(0);
  }

 private:
  static constexpr int kSpinMicros = 2000;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int32_t> items_;
  std::atomic<int32_t> size_{0};
};

}  // namespace devplace::exec
