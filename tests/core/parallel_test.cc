// ParallelFor: every item once, on the threads asked for, with the setup per thread and errors rethrown.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/parallel.h"

namespace devplace {
namespace {

TEST(ParallelFor, RunsEveryItemOnceWhateverTheThreadCount) {
  for (int32_t threads : {0, 1, 2, 3, 16}) {
    std::vector<std::atomic<int>> runs(37);
    ParallelFor(runs.size(), threads, [&](size_t i) { runs[i].fetch_add(1); });
    for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), 1) << "item " << i << ", threads " << threads;
  }
  ParallelFor(0, 4, [](size_t) { FAIL() << "no item to run"; });
}

TEST(ParallelFor, OneThreadRunsTheItemsInOrderOnTheCaller) {
  std::vector<size_t> order;
  const std::thread::id caller = std::this_thread::get_id();
  int setups = 0;
  ParallelFor(
      5, 1,
      [&](size_t i) {
        EXPECT_EQ(std::this_thread::get_id(), caller);
        order.push_back(i);
      },
      [&] { ++setups; });
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(setups, 0);  // no other thread to set up
}

TEST(ParallelFor, SetsUpEachThreadBeforeItsItems) {
  std::mutex mutex;
  std::set<std::thread::id> set_up, ran;
  thread_local bool ready = false;
  ParallelFor(
      64, 3,
      [&](size_t) {
        EXPECT_TRUE(ready);
        std::lock_guard<std::mutex> lock(mutex);
        ran.insert(std::this_thread::get_id());
      },
      [&] {
        ready = true;
        std::lock_guard<std::mutex> lock(mutex);
        set_up.insert(std::this_thread::get_id());
      });
  // The caller and up to two threads (a pool thread that wakes after the last item is claimed takes no part).
  EXPECT_GE(set_up.size(), 1u);
  EXPECT_LE(set_up.size(), 3u);
  for (const std::thread::id& id : ran) EXPECT_TRUE(set_up.count(id));
}

TEST(ParallelFor, UsesTheRequestedThreadsWhenItemsWaitForThem) {
  // Each item waits until three threads have taken part or a second has passed, so a pool thread that wakes late
  // still finds items; every call of the loop is served (the pool is reused across calls).
  for (int call = 0; call < 20; ++call) {
    std::mutex mutex;
    std::set<std::thread::id> ran;
    ParallelFor(6, 3, [&](size_t) {
      {
        std::lock_guard<std::mutex> lock(mutex);
        ran.insert(std::this_thread::get_id());
      }
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      while (std::chrono::steady_clock::now() < until) {
        {
          std::lock_guard<std::mutex> lock(mutex);
          if (ran.size() >= 3) break;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    });
    EXPECT_EQ(ran.size(), 3u) << "call " << call;
  }
}

TEST(ParallelFor, NestedAndConcurrentCallsRunEveryItemOnce) {
  // An item that calls ParallelFor (the pool is in use: the inner call starts threads of its own), and two callers
  // at once, one of which finds the pool taken.
  std::vector<std::atomic<int>> runs(12 * 16);
  auto outer = [&](size_t base) {
    ParallelFor(8, 2, [&, base](size_t i) {
      ParallelFor(16, 2, [&, base, i](size_t j) { runs[(base + i) * 16 + j].fetch_add(1); });
    });
  };
  for (int round = 0; round < 10; ++round) {
    for (auto& r : runs) r.store(0);
    std::thread other([&] { outer(4); });
    outer(0);
    other.join();
    // Rows 0..7 are the first caller's, 4..11 the second's: 4..7 run twice, the others once.
    for (size_t k = 0; k < runs.size(); ++k) {
      const size_t row = k / 16;
      const int expected = row >= 4 && row < 8 ? 2 : 1;
      ASSERT_EQ(runs[k].load(), expected) << "row " << row << ", round " << round;
    }
  }
}

TEST(ParallelFor, RunsInAForkedChild) {
  // The parent's pool threads are not in the child: the child's calls still run every item, on threads of its own.
  ParallelFor(4, 2, [](size_t) {});
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (int call = 0; call < 10; ++call) {
      std::vector<std::atomic<int>> runs(9);
      ParallelFor(runs.size(), 2, [&](size_t i) { runs[i].fetch_add(1); });
      for (auto& r : runs)
        if (r.load() != 1) _exit(1);
    }
    _exit(0);
  }
  int status = 0;
  for (int waited_ms = 0; waitpid(child, &status, WNOHANG) == 0; ++waited_ms) {
    if (waited_ms > 10000) {
      kill(child, SIGKILL);
      FAIL() << "the child hung";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ParallelFor, RethrowsAnItemsErrorAfterEveryThreadStopped) {
  std::atomic<int> done{0};
  EXPECT_THROW(ParallelFor(1000, 2,
                           [&](size_t i) {
                             if (i == 10) throw std::runtime_error("item 10");
                             std::this_thread::sleep_for(std::chrono::microseconds(200));
                             done.fetch_add(1);
                           }),
               std::runtime_error);
  EXPECT_LT(done.load(), 500);  // the claiming stopped (999 items would run otherwise)
}

TEST(ParallelFor, HardwareThreadsIsPositive) { EXPECT_GE(HardwareThreads(), 1); }

}  // namespace
}  // namespace devplace
