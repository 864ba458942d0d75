// Golden results: fingerprints of full simulations recorded before the simulator's speed work, so that any
// restructuring of the task-graph build, the event loop or the memory peaks must reproduce the previous results
// bit for bit (step time, per-device and per-link stats, memory peaks, OOM, critical path and the timeline in
// dequeue order). A mismatch prints the case and the new values. The partitioned cases were recorded again when a
// sharded update part started reading only its shard of the weight gradient and when partitioned edges started
// issuing their sends as a pairwise exchange (model changes, issue 17), and all cases when transfers became one
// per (tensor, destination device) instead of one per edge (issue 21, docs/simulator.md).
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "core/topology_yaml.h"
#include "sim/simulator.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

// FNV-1a over the exact bits of every field of a result.
class Fingerprint {
 public:
  void Add(uint64_t x) {
    for (int b = 0; b < 8; ++b) {
      hash_ ^= (x >> (8 * b)) & 0xff;
      hash_ *= 0x100000001b3ull;
    }
  }
  void Add(double x) { Add(std::bit_cast<uint64_t>(x)); }
  void Add(int64_t x) { Add(static_cast<uint64_t>(x)); }
  void Add(int32_t x) { Add(static_cast<uint64_t>(static_cast<int64_t>(x))); }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ull;
};

uint64_t FingerprintOf(const SimResult& r) {
  Fingerprint f;
  f.Add(r.step_time);
  for (const DeviceStats& d : r.devices) {
    f.Add(d.busy_seconds);
    f.Add(d.utilisation);
    f.Add(d.static_bytes);
    f.Add(d.peak_bytes);
    f.Add(d.overage_bytes);
    f.Add(d.num_tasks);
  }
  for (const LinkStats& l : r.links) {
    f.Add(l.busy_seconds);
    f.Add(l.bytes);
    f.Add(l.num_tasks);
  }
  f.Add(static_cast<int32_t>(r.oom));
  f.Add(r.bytes_moved);
  f.Add(r.num_tasks);
  f.Add(r.num_compute_tasks);
  f.Add(r.cost_fallbacks);
  for (OpId op : r.critical_path) f.Add(op);
  f.Add(r.critical_compute_seconds);
  for (const TimelineTask& t : r.timeline) {
    f.Add(static_cast<int32_t>(t.kind));
    f.Add(t.op);
    f.Add(t.consumer);
    f.Add(t.part);
    f.Add(t.resource);
    f.Add(t.bytes);
    f.Add(t.start);
    f.Add(t.end);
  }
  return f.value();
}

Topology Preset(const std::string& name) {
  Expected<Topology> t = ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/" + name);
  if (!t) throw std::runtime_error(t.error().message);
  return std::move(t).value();
}

// A plain placement that cuts the topological order into `devices` contiguous blocks.
Strategy Contiguous(const Graph& g, int devices) {
  std::vector<DeviceId> device(static_cast<size_t>(g.num_ops()), 0);
  const auto& order = g.topological_order();
  for (size_t k = 0; k < order.size(); ++k)
    device[order[k]] = static_cast<DeviceId>(k * static_cast<size_t>(devices) / order.size());
  return Strategy::FromPlacement(device);
}

struct Golden {
  const char* name;
  uint64_t graph_seed;
  int ops;
  int topology;        // index into the topologies below
  double p_partition;  // < 0: the contiguous plain placement
  uint64_t strategy_seed;
  double step_time;    // recorded step time (exact)
  uint64_t fingerprint;
};

TEST(Golden, FullSimulationsReproduceRecordedResults) {
  const Topology topologies[] = {testing::FullyConnected(4, 50e9, 2e-6), testing::TwoHosts(2, 12e9, 3e-6),
                                 testing::Star(4, 25e9, 1e-6), Preset("dgx1-v100.yaml"),
                                 Preset("p100-4x4-ib.yaml"), Preset("k80-8-pcie.yaml")};
  const Golden cases[] = {
      {"plain/fully-connected", 21, 120, 0, 0.0, 1, 0x1.7d29127221232p-9, 0x3c5b3048c81027b4ull},
      {"plain/two-hosts", 22, 150, 1, 0.0, 2, 0x1.8b37b89d3e22fp-8, 0xaaaaaf404655cc70ull},
      {"partitioned/star", 23, 80, 2, 0.3, 3, 0x1.02a2e9180f122p-9, 0x8f528fb17ba3ce87ull},
      {"partitioned/two-hosts", 24, 80, 1, 0.4, 4, 0x1.e9dad84279415p-9, 0x33f06406c7550c65ull},
      {"plain/dgx1", 25, 600, 3, 0.0, 5, 0x1.0a80ecf9ee98dp-7, 0xcaea8329a15f152eull},
      {"contiguous/dgx1", 26, 600, 3, -1.0, 6, 0x1.a427de11d023ap-8, 0x7b38857eb47bdabeull},
      {"partitioned/dgx1", 27, 200, 3, 0.3, 7, 0x1.eb9e82e7659f7p-9, 0xbc676181e2304969ull},
      {"plain/p100-4x4-ib", 28, 400, 4, 0.0, 8, 0x1.4321af06c9572p-8, 0xcffd07d811e5212bull},
      {"partitioned/p100-4x4-ib", 29, 150, 4, 0.5, 9, 0x1.772595514c3bcp-9, 0xc76b5e14204431e2ull},
      {"contiguous/k80-pcie", 30, 500, 5, -1.0, 10, 0x1.fca7a55bd3c02p-8, 0xefcc3188fe4c5605ull},
      {"partitioned/k80-pcie", 31, 150, 5, 0.2, 11, 0x1.89331c06ec25cp-9, 0x671c759f2d0619eeull},
  };
  SimOptions options;
  options.keep_timeline = true;
  for (const Golden& c : cases) {
    SCOPED_TRACE(c.name);
    const Graph graph = testing::RandomTrainingGraph(c.graph_seed, c.ops);
    const Topology& topology = topologies[c.topology];
    std::mt19937_64 rng(c.strategy_seed);
    const Strategy strategy = c.p_partition < 0 ? Contiguous(graph, topology.num_devices())
                                                : testing::RandomStrategy(graph, topology.num_devices(),
                                                                          c.p_partition, rng);
    const CostModel cost = MakeAnalyticCostModel();
    Expected<SimResult> r = Simulate(graph, topology, strategy, cost, options);
    ASSERT_TRUE(r.ok()) << r.error().message;
    const uint64_t fp = FingerprintOf(*r);
    char line[160];
    std::snprintf(line, sizeof(line), "got step_time %a, fingerprint 0x%016llxull", r->step_time,
                  static_cast<unsigned long long>(fp));
    EXPECT_EQ(r->step_time, c.step_time) << line;
    EXPECT_EQ(fp, c.fingerprint) << line;
    // The reusable simulator and the step-time-only run agree with the one-shot result.
    Simulator sim = std::move(Simulator::Create(graph, topology, cost, options)).value();
    EXPECT_EQ(FingerprintOf(*sim.Run(strategy)), fp);
    EXPECT_EQ(*sim.RunStepTime(strategy), r->step_time);
    Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topology, strategy, cost, options);
    ASSERT_TRUE(delta.ok());
    EXPECT_EQ(FingerprintOf(delta->result()), fp);
    // Without the timeline a plain strategy takes the op-graph path (sim/plain_sim.h): the same result.
    SimResult bare = *r;
    bare.timeline.clear();
    Expected<SimResult> no_timeline = Simulate(graph, topology, strategy, cost);
    ASSERT_TRUE(no_timeline.ok());
    EXPECT_EQ(FingerprintOf(*no_timeline), FingerprintOf(bare));
  }
}

}  // namespace
}  // namespace devplace
