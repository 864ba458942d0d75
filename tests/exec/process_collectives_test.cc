// Collectives between processes on the c10d group (exec/process_collectives.h): the order every rank issues them
// in respects their dependencies and the estimated readiness; two ranks whose collectives become ready in opposite
// orders still run them in that one order (no deadlock) with the right sums; a data-parallel plan over two ranks
// runs its gradient all-reduces as group collectives, in the same order on both ranks, and sends no ring steps;
// three ranks run a collective among two of them on a subgroup.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include "agents/search.h"
#include "core/topology_yaml.h"
#include "exec/multiprocess.h"
#include "exec/collectives.h"
#include "exec/part_rank.h"
#include "exec/process_collectives.h"
#include "sim/cost_model.h"
#include "tests/testing/exec_graphs.h"
#include "tests/testing/exec_ranks.h"
#include "tests/testing/ranks.h"

namespace devplace::exec {
namespace {

// Two members (devices 0 and 1); a compute task per member as its input, then an all-reduce.
std::vector<int32_t> AllReduceAfter(TaskProgram* program, const std::vector<int32_t>& ready, const std::string& label) {
  CollectiveGroup g;
  g.devices = {0, 1};
  g.slots = {program->AddSlot(), program->AddSlot()};
  g.extent = 8;
  g.bytes = 32;
  g.label = label;
  return AppendAllReduce(program, g, ready);
}

std::vector<int32_t> Inputs(TaskProgram* program) {
  std::vector<int32_t> ready;
  for (DeviceId d : {0, 1}) {
    Task t;
    t.device = d;
    ready.push_back(program->Add(t));
  }
  return ready;
}

std::vector<int32_t> CollectiveOf(const TaskProgram& program) {
  std::vector<int32_t> of;
  for (const Task& t : program.tasks) of.push_back(t.kind == TaskKind::kReceive ? t.collective : -1);
  return of;
}

TEST(ProcessCollectives, OrderFollowsReadinessAndDependencies) {
  TaskProgram p;
  const std::vector<int32_t> heavy = Inputs(&p), light = Inputs(&p);
  AllReduceAfter(&p, heavy, "a");                                  // collective 0: ready after the heavy inputs
  const std::vector<int32_t> b = AllReduceAfter(&p, light, "b");  // 1: ready early
  AllReduceAfter(&p, b, "c");                                      // 2: needs 1's result
  std::vector<double> cost(p.tasks.size(), 1.0);
  for (int32_t t : heavy) cost[t] = 100.0;
  Expected<std::vector<int32_t>> order = OrderCollectives(p, CollectiveOf(p), cost, {0, 1, 2});
  ASSERT_TRUE(order.ok()) << order.error().message;
  EXPECT_EQ(*order, (std::vector<int32_t>{1, 2, 0}));
  // However cheap what follows a collective, one that needs its result comes after it.
  for (int32_t t : heavy) cost[t] = 0.5;
  order = OrderCollectives(p, CollectiveOf(p), cost, {2, 1, 0});
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(*order, (std::vector<int32_t>{0, 1, 2}));  // 0 is ready first now; 2 needs 1
}

TEST(ProcessCollectives, CollectivesDependingOnEachOtherBothWaysAreRefused) {
  TaskProgram p;
  p.collectives.resize(2);
  std::vector<int32_t> t;
  for (int i = 0; i < 4; ++i) {
    Task task;
    task.kind = TaskKind::kReceive;
    task.collective = i / 2;  // 0, 0, 1, 1
    t.push_back(p.Add(task));
  }
  p.Dep(t[0], t[2]);  // collective 0 -> 1
  p.Dep(t[3], t[1]);  // collective 1 -> 0
  Expected<std::vector<int32_t>> order = OrderCollectives(p, CollectiveOf(p), std::vector<double>(4, 1.0), {0, 1});
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.error().message.find("depend on each other both ways"), std::string::npos);
}

// Rank r's input of collective k: distinct per rank and collective.
at::Tensor Input(int32_t rank, int32_t k) {
  return at::arange(10, at::kFloat).reshape({5, 2}) * static_cast<float>(rank + 1) + static_cast<float>(10 * k);
}

// Runs `body` on two ranks (threads, each with its own group over a loopback rendezvous) and returns per rank
// what failed: the connection's error, or what `body` returned ("" when nothing failed).
std::vector<std::string> OnTwoRanks(const std::function<std::string(int32_t rank, ProcessGroup& group)>& body) {
  const int port = testing::FreeLoopbackPort();
  std::vector<std::string> failures(2);
  std::vector<std::thread> ranks;
  for (int32_t r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      DistributedConfig config{.rank = r, .world_size = 2, .local_rank = r, .master_addr = "127.0.0.1",
                               .master_port = port, .timeout_seconds = 30.0};
      Expected<std::unique_ptr<ProcessGroup>> group = ProcessGroup::Connect(config);
      failures[r] = group ? body(r, **group) : group.error().message;
    });
  for (std::thread& t : ranks) t.join();
  return failures;
}

// Two ranks (threads with a group each) run an all-reduce and a reduce-scatter; rank 0's collectives become ready
// in the opposite order of rank 1's. Both run them in the shared order and compute the sums.
TEST(ProcessCollectives, RanksReadyInOppositeOrdersAgree) {
  std::vector<std::vector<int32_t>> completed(2);
  std::vector<std::vector<at::Tensor>> results(2);
  const std::vector<std::string> failures = OnTwoRanks([&](int32_t r, ProcessGroup& group) {
    TaskProgram program;
    std::vector<ProcessCollective> order(2);
    for (int32_t k = 0; k < 2; ++k) {
      Task t;
      t.kind = TaskKind::kCollective;
      t.dst = program.AddSlot();
      t.length = 5;
      order[k].task = program.Add(t);
      order[k].collective = k;
      order[k].scatter = k == 1;  // rank 0 holds member 1: it keeps chunk 1 (rows 2..4), rank 1 chunk 0
      order[k].ranks = {0, 1};
      order[k].member_of_rank = {1, 0};
      order[k].what = "test collective " + std::to_string(k);
    }
    CollectiveSequencer sequencer(program, order, {&group, &group});
    std::vector<at::Tensor> slots = {Input(r, 0), Input(r, 1)};
    std::mutex mu;
    std::condition_variable cv;
    std::string failure;
    sequencer.BeginStep(
        [&](int32_t task, double) {
          std::lock_guard<std::mutex> lock(mu);
          completed[r].push_back(task);
          cv.notify_all();
        },
        [&](const std::string& message) {
          std::lock_guard<std::mutex> lock(mu);
          failure = message;
          cv.notify_all();
        });
    for (int32_t k : r == 0 ? std::vector<int32_t>{1, 0} : std::vector<int32_t>{0, 1}) {
      sequencer.Ready(order[k].task, slots);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait_for(lock, std::chrono::seconds(20), [&] { return completed[r].size() == 2 || !failure.empty(); });
    }
    sequencer.EndStep();
    results[r] = slots;
    return failure;
  });
  for (int32_t r = 0; r < 2; ++r) {
    ASSERT_EQ(failures[r], "") << "rank " << r;
    EXPECT_EQ(completed[r], (std::vector<int32_t>{0, 1})) << "rank " << r;
    EXPECT_TRUE(at::equal(results[r][0], Input(0, 0) + Input(1, 0))) << "rank " << r;
    const int64_t lo = r == 0 ? 2 : 0, len = r == 0 ? 3 : 2;  // 5 rows in chunks of 2 and 3
    EXPECT_TRUE(at::equal(results[r][1].narrow(0, lo, len), (Input(0, 1) + Input(1, 1)).narrow(0, lo, len)))
        << "rank " << r;
  }
}

// A subgroup asked with a list that is not at least two distinct ranks of the group, sorted, is an error naming
// the rank and the list, returned before any rendezvous (so each rank returns on its own); the group's own two
// ranks then make a working subgroup.
TEST(ProcessCollectives, SubgroupsOfBadRankListsAreErrors) {
  std::vector<std::vector<std::string>> errors(2);
  std::vector<at::Tensor> sums(2);
  const std::vector<std::string> failures = OnTwoRanks([&](int32_t r, ProcessGroup& group) -> std::string {
    const std::vector<std::vector<int32_t>> bad_lists = {{}, {0}, {1, 0}, {0, 0}, {0, 2}, {-1, 1}};
    for (const std::vector<int32_t>& bad : bad_lists) {
      Expected<std::unique_ptr<ProcessGroup>> sub = group.SubGroup(bad);
      errors[r].push_back(sub.ok() ? "made" : sub.error().message);
    }
    Expected<std::unique_ptr<ProcessGroup>> sub = group.SubGroup({0, 1});
    if (!sub) return sub.error().message;
    sums[r] = at::full({3}, static_cast<float>(r + 1));
    const Status summed = (*sub)->AllReduceSum(sums[r], "the test's sum");
    return summed ? "" : summed.error().message;
  });
  for (int32_t r = 0; r < 2; ++r) {
    ASSERT_EQ(failures[r], "") << "rank " << r;
    const std::vector<std::string> lists = {"none", "0", "1, 0", "0, 0", "0, 2", "-1, 1"};
    ASSERT_EQ(errors[r].size(), lists.size());
    for (size_t k = 0; k < lists.size(); ++k) {
      EXPECT_NE(errors[r][k].find("rank " + std::to_string(r)), std::string::npos) << errors[r][k];
      EXPECT_NE(errors[r][k].find("at least two distinct ranks of the group's 2, sorted; got ranks " + lists[k]),
                std::string::npos)
          << errors[r][k];
    }
    EXPECT_TRUE(at::equal(sums[r], at::full({3}, 3.0f))) << "rank " << r;
  }
}

// A data-parallel Transformer over two ranks: every gradient all-reduce is one collective task per rank, both ranks
// issue them in the same order, and no ring step crosses as a message (the ring steps when grouping is off).
TEST(ProcessCollectives, DataParallelPlanRunsGroupCollectives) {
  const Graph g = testing::TinyTransformer(4, 8, 50, 32, 4);
  const Topology t = testing::CpuLocal();
  SearchProblem problem{&g, &t, MakeAnalyticCostModel(), SimOptions{}};
  Expected<std::unique_ptr<SearchAlgorithm>> algo = MakeSearchAlgorithm("data-parallel");
  ASSERT_TRUE(algo.ok());
  Expected<SearchResult> searched = (*algo)->Search(problem, SearchRequest{});
  ASSERT_TRUE(searched.ok());
  const std::vector<at::Device> devices(2, at::Device(at::kCPU));
  Expected<PartPlan> plan = BuildPartPlan(g, t, searched->strategy, devices, 1);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  int32_t all_reduces = 0;
  for (const CollectiveInfo& c : plan->program.collectives) all_reduces += c.kind == "all-reduce";
  ASSERT_GT(all_reduces, 3);
  std::vector<std::vector<int32_t>> order(2);
  for (int32_t me = 0; me < 2; ++me) {
    Expected<RankProgram> rank = BuildRankProgram(g, *plan, {0, 1}, me, 2, devices);
    ASSERT_TRUE(rank.ok()) << rank.error().message;
    EXPECT_EQ(static_cast<int32_t>(rank->collectives.size()), all_reduces);
    for (const ProcessCollective& c : rank->collectives) {
      order[me].push_back(c.collective);
      EXPECT_EQ(rank->program.tasks[c.task].kind, TaskKind::kCollective);
      EXPECT_GT(rank->program.tasks[c.task].preds, 0);
    }
    for (const Task& task : rank->program.tasks) EXPECT_NE(task.kind, TaskKind::kReceive);
    for (const ProcessTransport::Message& m : rank->messages) EXPECT_EQ(m.name.find("chunk"), std::string::npos);
    Expected<RankProgram> ring = BuildRankProgram(g, *plan, {0, 1}, me, 2, devices, false);
    ASSERT_TRUE(ring.ok());
    EXPECT_TRUE(ring->collectives.empty());
    int32_t chunks = 0;
    for (const ProcessTransport::Message& m : ring->messages) chunks += m.name.find("chunk") != std::string::npos;
    EXPECT_EQ(chunks, 4 * all_reduces);  // per all-reduce, a reduce-scatter and an all-gather step each way
  }
  EXPECT_EQ(order[0], order[1]);
}

// Three ranks, one per device of a three-core machine, and a data-parallel Transformer over the first two: its
// all-reduces run on the subgroup of ranks 0 and 1 (rank 2 runs nothing and makes no subgroup), and every op computes
// what one process computes for the same strategy (within 1e-5 relative).
TEST(ProcessCollectives, ASubgroupRunsCollectivesAmongSomeRanks) {
  const Graph g = testing::TinyTransformer(4, 8, 50, 32, 4);
  const Topology two = testing::CpuLocal();
  const Topology three =
      TopologyFromYaml("name: cpu3\ndevices:\n  - {name: \"cpu{i}\", count: 3, kind: cpu, host: localhost, "
                       "peak_tflops: 0.08, memory_bandwidth_gbs: 10, memory_gib: 8}\nswitches:\n"
                       "  - {name: shm, host: localhost}\nlinks:\n  - {hub: shm, nodes: [cpu0, cpu1, cpu2], "
                       "bandwidth_gbs: 5, latency_us: 5, kind: memcpy}\n",
                       "cpu3")
          .value();
  SearchProblem problem{&g, &two, MakeAnalyticCostModel(), SimOptions{}};
  Expected<std::unique_ptr<SearchAlgorithm>> algo = MakeSearchAlgorithm("data-parallel");
  ASSERT_TRUE(algo.ok());
  const Strategy dp = (*algo)->Search(problem, SearchRequest{}).value().strategy;
  const ExecOptions options = testing::OneRecordedCpuStep();
  Expected<ExecResult> one = ExecuteStrategy(g, three, dp, options);
  ASSERT_TRUE(one.ok()) << one.error().message;
  const std::vector<Expected<ExecResult>> results = testing::RunAsRanks(g, three, dp, options, 3);
  for (int32_t r = 0; r < 3; ++r) ASSERT_TRUE(results[r].ok()) << "rank " << r << ": " << results[r].error().message;
  ASSERT_FALSE(results[0]->collectives.empty());
  int32_t compared = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.op(op).role == OpRole::kUpdate) continue;  // Adam's first step amplifies rounding (partition_test masks it)
    const std::vector<float>&a = one->op_values[op], &b = results[0]->op_values[op];
    ASSERT_EQ(a.size(), b.size()) << g.op(op).name;
    double scale = 0.0, diff = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
      scale = std::max(scale, std::abs(static_cast<double>(a[i])));
      diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    }
    EXPECT_LE(diff, 1e-5 * std::max(scale, 1e-30)) << g.op(op).name;
    compared += !a.empty();
  }
  EXPECT_GT(compared, 10);
}

}  // namespace
}  // namespace devplace::exec
