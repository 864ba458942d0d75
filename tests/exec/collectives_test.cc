// The executor's collectives, run on three CPU workers: each leaves every member with the values its definition
// gives (sums, gathered chunks, exchanged chunks, the root's tensor), with the simulator's step counts.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <functional>

#include "exec/collectives.h"
#include "exec/task_program.h"

namespace devplace::exec {
namespace {

constexpr int kMembers = 3;
// Not divisible by 3 (chunks of 3, 3 and 4 rows), except for the all-to-all, whose chunks must be equal.
int64_t kExtent = 10;

at::Tensor Input(int member) {
  return at::arange(kExtent * 4, at::kFloat).reshape({kExtent, 4}) * static_cast<float>(member + 1) + member;
}

CollectiveGroup Group(TaskProgram* program) {
  CollectiveGroup g;
  for (int i = 0; i < kMembers; ++i) {
    g.devices.push_back(i);
    g.slots.push_back(program->AddSlot());
  }
  g.extent = kExtent;
  g.bytes = kExtent * 4 * 4;
  g.label = "test";
  return g;
}

// One compute task per member (unit i fills member i's slot with Input(i)); sets *ready to them.
void AddInputs(TaskProgram& program, std::vector<int32_t>* ready) {
  for (int i = 0; i < kMembers; ++i) {
    Task t;
    t.device = i;
    t.unit = i;
    (*ready)[i] = program.Add(t);
  }
}

// Runs `program` and returns its slots.
std::vector<at::Tensor> Execute(TaskProgram& program, const std::vector<int32_t>& inputs) {
  TaskRuntime runtime(program, std::vector<at::Device>(kMembers, at::Device(at::kCPU)), std::vector<int>(kMembers, -1));
  std::vector<at::Tensor> slots;
  TaskTimes times;
  const UnitRunner run = [&](int32_t unit, std::vector<at::Tensor>& s) { s[inputs[unit]] = Input(unit); };
  EXPECT_EQ(runtime.Step(run, &slots, &times), "");
  return slots;
}

using Builder = std::function<void(TaskProgram*, const CollectiveGroup&, const std::vector<int32_t>&)>;

// A program of input tasks and the collective `build` appends over Group(), with the slots it left after a step.
struct Ran {
  TaskProgram program;
  CollectiveGroup group;
  std::vector<at::Tensor> slots;
};

Ran RunCollective(const Builder& build) {
  Ran r;
  r.group = Group(&r.program);
  std::vector<int32_t> ready(kMembers);
  AddInputs(r.program, &ready);
  build(&r.program, r.group, ready);
  r.slots = Execute(r.program, r.group.slots);
  return r;
}

int32_t Receives(const TaskProgram& program) {
  int32_t n = 0;
  for (const Task& t : program.tasks) n += t.kind == TaskKind::kReceive;
  return n;
}

at::Tensor InputSum() { return Input(0) + Input(1) + Input(2); }

TEST(Collectives, AllReduceSumsOnEveryMember) {
  const Ran r = RunCollective([](TaskProgram* p, const CollectiveGroup& g, const std::vector<int32_t>& ready) {
    AppendAllReduce(p, g, ready);
  });
  for (int i = 0; i < kMembers; ++i) EXPECT_TRUE(at::equal(r.slots[r.group.slots[i]], InputSum())) << i;
  EXPECT_EQ(Receives(r.program), kMembers * 2 * (kMembers - 1));  // 2(n - 1) steps of n sends
  ASSERT_EQ(r.program.collectives.size(), 1u);
  EXPECT_EQ(r.program.collectives[0].kind, "all-reduce");
}

TEST(Collectives, ReduceScatterLeavesChunkIOnMemberI) {
  const Ran r = RunCollective([](TaskProgram* p, const CollectiveGroup& g, const std::vector<int32_t>& ready) {
    AppendReduceScatter(p, g, ready);
  });
  for (int i = 0; i < kMembers; ++i) {
    const int64_t lo = kExtent * i / kMembers, hi = kExtent * (i + 1) / kMembers;
    EXPECT_TRUE(at::equal(r.slots[r.group.slots[i]].narrow(0, lo, hi - lo), InputSum().narrow(0, lo, hi - lo))) << i;
  }
  EXPECT_EQ(Receives(r.program), kMembers * (kMembers - 1));
}

TEST(Collectives, AllGatherGivesEveryMemberEveryChunk) {
  const Ran r = RunCollective([](TaskProgram* p, const CollectiveGroup& g, const std::vector<int32_t>& ready) {
    AppendAllGather(p, g, ready);
  });
  for (int i = 0; i < kMembers; ++i)
    for (int c = 0; c < kMembers; ++c) {
      const int64_t lo = kExtent * c / kMembers, hi = kExtent * (c + 1) / kMembers;
      EXPECT_TRUE(at::equal(r.slots[r.group.slots[i]].narrow(0, lo, hi - lo), Input(c).narrow(0, lo, hi - lo)))
          << i << c;
    }
}

TEST(Collectives, AllToAllExchangesChunks) {
  kExtent = 12;
  std::vector<int32_t> out;
  const Ran r = RunCollective([&](TaskProgram* p, const CollectiveGroup& g, const std::vector<int32_t>& ready) {
    for (int i = 0; i < kMembers; ++i) out.push_back(p->AddSlot());
    AppendAllToAll(p, g, out, ready);
  });
  const int64_t len = kExtent / kMembers;
  for (int i = 0; i < kMembers; ++i)
    for (int j = 0; j < kMembers; ++j)
      EXPECT_TRUE(at::equal(r.slots[out[j]].narrow(0, i * len, len), Input(i).narrow(0, j * len, len))) << i << j;
  kExtent = 10;
  EXPECT_EQ(Receives(r.program), kMembers * kMembers);  // n(n - 1) sends and n local chunks
}

TEST(Collectives, BroadcastCopiesTheRootAlongTheChain) {
  const Ran r = RunCollective([](TaskProgram* p, const CollectiveGroup& g, const std::vector<int32_t>& ready) {
    AppendBroadcast(p, g, 4, ready);
  });
  for (int i = 1; i < kMembers; ++i) EXPECT_TRUE(at::equal(r.slots[r.group.slots[i]], Input(0))) << i;
  EXPECT_EQ(Receives(r.program), 4 * (kMembers - 1));
}

}  // namespace
}  // namespace devplace::exec
