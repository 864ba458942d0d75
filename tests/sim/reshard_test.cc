// Cross-mesh resharding priced on an idle two-host machine against each method's formula, and the balancers
// (sim/reshard.h).
#include "sim/reshard.h"

#include <gtest/gtest.h>

#include <string>

#include "core/reshard_suite.h"
#include "core/topology_yaml.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

constexpr double kIntra = 100e9, kInter = 1e9;  // bytes/s inside a host and between the hosts

// Two hosts of four devices, no latencies. With `rails`, every device has its own NIC to a fabric switch
// (bandwidth kInter each, as one NIC per GPU); otherwise one link of kInter joins the hosts' PCIe switches.
Topology TwoHosts(bool rails) {
  TopologyBuilder b(rails ? "rails" : "one-nic");
  for (int i = 0; i < 8; ++i) {
    Device d = testing::MakeDevice(std::string("d").append(std::to_string(i)));
    d.host = i < 4 ? "h0" : "h1";
    b.add_device(d);
  }
  const NodeId s0 = b.add_switch({"pcie0", "h0"}), s1 = b.add_switch({"pcie1", "h1"});
  for (int i = 0; i < 8; ++i) b.add_bidirectional_link(i, i < 4 ? s0 : s1, kIntra, 0, "pcie");
  if (rails) {
    const NodeId fabric = b.add_switch({"fabric", "fabric"});
    for (int i = 0; i < 8; ++i) b.add_bidirectional_link(i, fabric, kInter, 0, "infiniband");
  } else {
    b.add_bidirectional_link(s0, s1, kInter, 0, "ethernet");
  }
  Expected<Topology> t = std::move(b).Build();
  EXPECT_TRUE(t.ok());
  return *t;
}

std::vector<UnitTask> Tasks(const Topology& t, const char* src_mesh, const char* src_spec, const char* dst_mesh,
                            const char* dst_spec, std::vector<int64_t> shape) {
  const Mesh src = *MeshAt(src_mesh, t, "src"), dst = *MeshAt(dst_mesh, t, "dst");
  Expected<std::vector<UnitTask>> tasks =
      UnitTasks(shape, 4, src, *ParseAlpaSpec(src_spec, src), dst, *ParseAlpaSpec(dst_spec, dst));
  EXPECT_TRUE(tasks.ok()) << tasks.error().message;
  return *tasks;
}

double Seconds(const Topology& t, const std::vector<UnitTask>& tasks, ReshardMethod method, ReshardBalance balance,
               int32_t chunks = 64) {
  ReshardOptions o;
  o.method = method;
  o.balance = balance;
  o.broadcast_chunks = chunks;
  Expected<ReshardResult> r = PlanReshard(t, tasks, o);
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? r->seconds : -1;
}

// A replicated 64 MiB tensor on host 0's four devices, replicated on n devices of host 1: one unit task.
TEST(Reshard, MethodsMatchTheirFormulasOnOneNicPerHost) {
  const Topology t = TwoHosts(false);
  const double S = 64.0 * (1 << 20);
  for (const char* dst : {"1x1@4", "1x2@4", "1x4@4"}) {
    const std::vector<UnitTask> tasks = Tasks(t, "1x4@0", "R,R", dst, "R,R", {4096, 4096});
    ASSERT_EQ(tasks.size(), 1u);
    const double n = static_cast<double>(tasks[0].receivers.size());
    // Send/recv: every receiver gets the whole slice over the one inter-host link.
    EXPECT_NEAR(Seconds(t, tasks, ReshardMethod::kSendRecv, ReshardBalance::kNaive), n * S / kInter,
                0.02 * n * S / kInter) << dst;
    // Broadcast: one slice over the inter-host link, then chunks move on inside host 1 in its shadow.
    EXPECT_NEAR(Seconds(t, tasks, ReshardMethod::kBroadcast, ReshardBalance::kNaive), S / kInter, 0.03 * S / kInter)
        << dst;
    // Alpa's: 1/n of the slice to each receiver (the whole slice over the link), then an all-gather of
    // n - 1 steps of S / n over two PCIe hops each.
    const double alpa = S / kInter + (n - 1) * S / n / kIntra;
    EXPECT_NEAR(Seconds(t, tasks, ReshardMethod::kAlpa, ReshardBalance::kNaive), alpa, 0.03 * alpa) << dst;
    // Receivers on one host: the global all-gather is Alpa's.
    EXPECT_NEAR(Seconds(t, tasks, ReshardMethod::kGlobalAllGather, ReshardBalance::kNaive), alpa, 0.03 * alpa);
  }
}

TEST(Reshard, GlobalAllGatherCrossesHostsAgain) {
  // Receivers on both hosts (an 8-device replicated destination over the source's host too): a global ring
  // all-gather sends shards back and forth over the inter-host link, Alpa's gathers inside each host.
  const Topology t = TwoHosts(false);
  const std::vector<UnitTask> tasks = Tasks(t, "1x2@0", "R,R", "2x4@0", "R,R", {2048, 2048});
  ASSERT_EQ(tasks.size(), 1u);
  ASSERT_EQ(tasks[0].receivers.size(), 6u);
  const double global = Seconds(t, tasks, ReshardMethod::kGlobalAllGather, ReshardBalance::kNaive);
  const double alpa = Seconds(t, tasks, ReshardMethod::kAlpa, ReshardBalance::kNaive);
  const double broadcast = Seconds(t, tasks, ReshardMethod::kBroadcast, ReshardBalance::kNaive);
  EXPECT_GT(global, alpa);
  EXPECT_LE(broadcast, alpa);
}

TEST(Reshard, BroadcastStaysNearOneSliceAsChunksGrow) {
  const Topology t = TwoHosts(false);
  const std::vector<UnitTask> tasks = Tasks(t, "1x4@0", "R,R", "1x4@4", "R,R", {4096, 4096});
  const double S = 64.0 * (1 << 20);
  const double one = Seconds(t, tasks, ReshardMethod::kBroadcast, ReshardBalance::kNaive, 1);
  const double many = Seconds(t, tasks, ReshardMethod::kBroadcast, ReshardBalance::kNaive, 256);
  EXPECT_GT(one, many);
  EXPECT_LT(many, 1.01 * S / kInter);
}

TEST(Reshard, BalancedIsNeverWorseThanNaive) {
  const Topology rails = TwoHosts(true), nic = TwoHosts(false);
  struct Case {
    const char *src_mesh, *src_spec, *dst_mesh, *dst_spec;
  };
  const Case cases[] = {{"1x4@0", "R,R", "1x4@4", "S1,R"},    // 4 holders per slice, one receiver each
                        {"1x4@0", "R,R", "1x4@4", "R,R"},     // one slice, four holders
                        {"2x2@0", "S0,R", "1x4@4", "R,S1"},   // two holders per slice
                        {"1x4@0", "S1,R", "2x2@4", "S0,S1"}}; // one holder per slice
  for (const Topology* t : {&rails, &nic})
    for (const Case& c : cases) {
      const std::vector<UnitTask> tasks = Tasks(*t, c.src_mesh, c.src_spec, c.dst_mesh, c.dst_spec, {1024, 1024});
      for (ReshardMethod m : {ReshardMethod::kSendRecv, ReshardMethod::kAlpa, ReshardMethod::kBroadcast}) {
        const double naive = Seconds(*t, tasks, m, ReshardBalance::kNaive);
        for (ReshardBalance b : {ReshardBalance::kLoadBalance, ReshardBalance::kOurs})
          EXPECT_LE(Seconds(*t, tasks, m, b), naive * (1 + 1e-9))
              << t->name() << " " << c.src_spec << "->" << c.dst_spec << " " << ToString(m) << " " << ToString(b);
      }
    }
  // With a NIC per device, spreading the four slices of a replicated source over the four holders is 4x faster
  // than sending them all from the lowest-id holder.
  // Every balancer but naive finds that spread by itself (lb-only and dfs without simulating).
  const std::vector<UnitTask> tasks = Tasks(rails, "1x4@0", "R,R", "1x4@4", "S1,R", {1024, 1024});
  const double naive = Seconds(rails, tasks, ReshardMethod::kBroadcast, ReshardBalance::kNaive);
  for (ReshardBalance b : {ReshardBalance::kLoadBalance, ReshardBalance::kDfs, ReshardBalance::kOurs})
    EXPECT_NEAR(Seconds(rails, tasks, ReshardMethod::kBroadcast, b), naive / 4, 0.02 * naive) << ToString(b);
  // One NIC per host, a source replicated on d2, d3 (host 0) and d4 (host 1), two slices needed by d5 and d6 (host
  // 1): naive sends both from d2 over the slow link, a device-only balance from d2 and d3 (still over it); the
  // balancers weigh the sending host's cross-host bytes first and send both from d4, inside host 1.
  const std::vector<UnitTask> split = Tasks(nic, "1x3@2", "R,R", "1x2@5", "S1,R", {1024, 1024});
  ASSERT_EQ(split.size(), 2u);
  const double split_naive = Seconds(nic, split, ReshardMethod::kBroadcast, ReshardBalance::kNaive);
  for (ReshardBalance b : {ReshardBalance::kLoadBalance, ReshardBalance::kDfs})
    EXPECT_LT(Seconds(nic, split, ReshardMethod::kBroadcast, b), 0.1 * split_naive) << ToString(b);
}

TEST(Reshard, PlansAreCheckedAndDeterministic) {
  const Topology t = TwoHosts(true);
  const std::vector<UnitTask> tasks = Tasks(t, "1x4@0", "R,R", "2x2@4", "S0,S1", {1024, 1024});
  ReshardOptions o;
  o.balance = ReshardBalance::kRandomGreedy;
  o.seed = 7;
  Expected<ReshardResult> a = PlanReshard(t, tasks, o), b = PlanReshard(t, tasks, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->plan, b->plan);
  EXPECT_EQ(a->seconds, b->seconds);
  ReshardPlan bad = a->plan;
  bad.sender[0] = 7;  // a destination device does not hold the slice
  EXPECT_FALSE(SimulateReshardPlan(t, tasks, bad, o).ok());
  bad = a->plan;
  bad.order[0] = bad.order[1];
  EXPECT_FALSE(SimulateReshardPlan(t, tasks, bad, o).ok());
}

// The shipped nine-case suite (configs/suites/reshard-alpa.yaml) on its preset, in the paper's directions: the
// broadcast is never slower than Alpa's send + all-gather, balancing never loses to naive, and on the multi-tile
// cases (3, 4, 9) the balanced broadcast beats the naive one (by 1.45-1.5x here: each host's one 10 Gb/s NIC bounds
// what balancing can win; docs/results.md).
TEST(Reshard, ShippedSuiteKeepsThePapersDirections) {
  const std::string root = DEVPLACE_SOURCE_DIR;
  Expected<Topology> t = ReadTopologyFile(root + "/configs/topologies/v100-5x4-eth.yaml");
  Expected<ReshardSuite> suite = ReadReshardSuiteFile(root + "/configs/suites/reshard-alpa.yaml");
  ASSERT_TRUE(t.ok() && suite.ok());
  ASSERT_EQ(suite->cases.size(), 9u);
  for (const ReshardCase& c : suite->cases) {
    const std::vector<UnitTask> tasks =
        Tasks(*t, c.src_mesh.c_str(), c.src_spec.c_str(), c.dst_mesh.c_str(), c.dst_spec.c_str(), c.shape);
    const double bcast = Seconds(*t, tasks, ReshardMethod::kBroadcast, ReshardBalance::kOurs, 32);
    const double naive = Seconds(*t, tasks, ReshardMethod::kBroadcast, ReshardBalance::kNaive, 32);
    EXPECT_LE(bcast, Seconds(*t, tasks, ReshardMethod::kAlpa, ReshardBalance::kOurs)) << c.name;
    EXPECT_LE(bcast, naive * (1 + 1e-9)) << c.name;
    if (c.name == "case3" || c.name == "case4" || c.name == "case9") {
      EXPECT_GT(naive / bcast, 1.4) << c.name;
    }
  }
}

}  // namespace
}  // namespace devplace
