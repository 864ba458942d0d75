#include "core/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace devplace {

int32_t HardwareThreads() { return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())); }

void ParallelFor(size_t count, int32_t threads, const std::function<void(size_t)>& work,
                 const std::function<void()>& thread_setup) {
  const size_t workers = std::min<size_t>(count, static_cast<size_t>(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) work(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto loop = [&] {
    try {
      if (thread_setup) thread_setup();
      for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) work(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next.store(count);
    }
  };
  std::vector<std::thread> pool;
  for (size_t w = 1; w < workers; ++w) pool.emplace_back(loop);
  loop();
  for (std::thread& t : pool) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace devplace
