#include "core/parallel.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace devplace {
namespace {

// One ParallelFor call: the items, the next one to claim and the first error.
struct Job {
  size_t count = 0;
  const std::function<void(size_t)>* work = nullptr;
  const std::function<void()>* setup = nullptr;
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;

  // Sets the calling thread up and claims items until none is left (or an item failed).
  void Loop() {
    try {
      if (*setup) (*setup)();
      for (size_t i = next.fetch_add(1); i < count; i = next.fetch_add(1)) (*work)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(failure_mutex);
      if (!failure) failure = std::current_exception();
      next.store(count);
    }
  }
};

// How long a waiting thread polls before it sleeps: a job that follows within this time (the next step of a
// vectorised environment, the next phase of a training minibatch) starts without a wake-up through the kernel.
constexpr std::chrono::microseconds kSpin{50};

// Spins for up to kSpin until done() holds; returns whether it does.
template <typename Done>
bool SpinUntil(Done done) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  do {
    for (int k = 0; k < 64; ++k)
      if (done()) return true;
  } while (std::chrono::steady_clock::now() < until);
  return done();
}

thread_local bool in_pool_worker = false;

// Threads kept for ParallelFor across calls (starting and joining them cost 0.1-0.25 ms per call on the 2-core
// VMs, per step of a vectorised environment and three times per training minibatch). One call uses the pool at a
// time; a call made while it is in use (from another thread, or nested inside an item) starts its own threads. A
// job is offered to `seats` pool threads; the caller claims items itself, and when it runs out of items it closes
// the seats not yet taken and waits only for the threads that took one, so a slow wake-up never delays a call, and
// a process whose pool threads are gone still finishes every call on the caller.
class WorkerPool {
 public:
  // The process's pool; never destroyed (its threads wait on it until the process ends). A child process made by
  // fork() starts a fresh one (the parent's threads are not in the child, and the old pool's lock may be held).
  static WorkerPool& Get() { return *Slot(); }

  // Runs `job` on the caller and up to `helpers` pool threads; false (nothing run) when the pool is in use or the
  // caller is one of its threads.
  bool TryRun(Job& job, size_t helpers) {
    if (in_pool_worker) return false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (busy_) return false;
      // A new thread waits for the generation after the current one: the job offered below. (Should starting one
      // throw, the pool stays free for the next call.)
      while (threads_ < helpers) {
        std::thread(&WorkerPool::WorkerMain, this, generation_.load(std::memory_order_relaxed)).detach();
        ++threads_;
      }
      busy_ = true;
      job_ = &job;
      seats_ = helpers;
      seated_ = finished_ = 0;
      generation_.fetch_add(1, std::memory_order_release);
    }
    wake_.notify_all();
    job.Loop();
    {
      std::unique_lock<std::mutex> lock(mutex_);
      seats_ = 0;  // no item is left for a thread that has not started yet
      if (finished_ < seated_) {
        lock.unlock();
        SpinUntil([&] { return all_finished_.load(std::memory_order_acquire); });
        lock.lock();
        done_.wait(lock, [&] { return finished_ == seated_; });
      }
      job_ = nullptr;
      busy_ = false;
    }
    return true;
  }

 private:
  WorkerPool() = default;

  static WorkerPool*& Slot() {
    static WorkerPool* pool = [] {
      pthread_atfork(nullptr, nullptr, [] { Slot() = new WorkerPool; });
      return new WorkerPool;
    }();
    return pool;
  }

  // A pool thread's life: waits for a job offered after generation `seen`, takes a seat if one is left, runs it.
  void WorkerMain(uint64_t seen) {
    in_pool_worker = true;
    for (;;) {
      if (!SpinUntil([&] { return generation_.load(std::memory_order_acquire) != seen; })) {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
      }
      Job* job = nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        seen = generation_.load(std::memory_order_relaxed);
        if (job_ != nullptr && seats_ > 0) {
          --seats_;
          ++seated_;
          all_finished_.store(false, std::memory_order_relaxed);
          job = job_;
        }
      }
      if (job == nullptr) continue;
      job->Loop();
      bool last = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        last = ++finished_ == seated_;
        if (last) all_finished_.store(true, std::memory_order_release);
      }
      if (last) done_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};  // bumped for every job offered
  std::atomic<bool> all_finished_{true};  // every seated thread finished the current job
  size_t threads_ = 0;
  Job* job_ = nullptr;
  size_t seats_ = 0, seated_ = 0, finished_ = 0;
  bool busy_ = false;
};

}  // namespace

int32_t HardwareThreads() { return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency())); }

void ParallelFor(size_t count, int32_t threads, const std::function<void(size_t)>& work,
                 const std::function<void()>& thread_setup) {
  const size_t workers = std::min<size_t>(count, static_cast<size_t>(std::max(1, threads)));
  if (workers <= 1) {
    for (size_t i = 0; i < count; ++i) work(i);
    return;
  }
  Job job;
  job.count = count;
  job.work = &work;
  job.setup = &thread_setup;
  if (!WorkerPool::Get().TryRun(job, workers - 1)) {
    std::vector<std::thread> pool;
    for (size_t w = 1; w < workers; ++w) pool.emplace_back([&] { job.Loop(); });
    job.Loop();
    for (std::thread& t : pool) t.join();
  }
  if (job.failure) std::rethrow_exception(job.failure);
}

}  // namespace devplace
