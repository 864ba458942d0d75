// ParallelFor: every item once, on the threads asked for, with the setup per thread and errors rethrown.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

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
  EXPECT_EQ(set_up.size(), 3u);  // the caller and two threads
  for (const std::thread::id& id : ran) EXPECT_TRUE(set_up.count(id));
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
