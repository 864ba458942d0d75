#include "tests/testing/sim_fixtures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <numeric>

#include "core/training_graph.h"

namespace devplace::testing {
namespace {

class FixedRate final : public CostModelImpl {
 public:
  explicit FixedRate(double rate) : rate_(rate) {}
  PartCost Cost(const PartWork& work, const Device&) const override { return {work.flops * rate_, false}; }
  std::string Describe() const override { return "fixed rate"; }

 private:
  double rate_;
};

// prefix + number (appending avoids GCC 12's false -Wrestrict on "literal" + std::string).
std::string Numbered(std::string prefix, uint64_t n) {
  prefix += std::to_string(n);
  return prefix;
}

template <class T>
T Check(Expected<T> e) {
  if (!e) throw std::runtime_error(e.error().message);
  return std::move(e).value();
}

}  // namespace

CostModel FixedRateCost(double seconds_per_flop) { return CostModel(std::make_shared<FixedRate>(seconds_per_flop)); }

Device MakeDevice(const std::string& name, int64_t memory_bytes) {
  Device d;
  d.name = name;
  d.kind = "test";
  d.host = "h0";
  d.peak_flops_f32 = 1e12;
  d.peak_flops_f16 = 1e12;
  d.memory_bandwidth = 1e11;
  d.memory_bytes = memory_bytes;
  return d;
}

Op MakeOp(const std::string& name, double flops, std::vector<int64_t> shape, int64_t param_bytes) {
  Op op;
  op.name = name;
  op.type = "test";
  op.flops = flops;
  op.shape = std::move(shape);
  op.param_bytes = param_bytes;
  return op;
}

Topology FullyConnected(int n, double bandwidth, double latency) {
  TopologyBuilder b(Numbered("full", n));
  for (int i = 0; i < n; ++i) b.add_device(MakeDevice(Numbered("d", i)));
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) b.add_bidirectional_link(i, j, bandwidth, latency, "nvlink");
  return Check(std::move(b).Build());
}

Topology WithLinkCosts(const Topology& topology, double message_cost, double step_cost, double step_bandwidth) {
  TopologyBuilder b(topology.name());
  for (const Device& d : topology.devices()) b.add_device(d);
  for (const Switch& s : topology.switches()) b.add_switch(s);
  for (Link l : topology.links()) {
    l.message_cost = message_cost;
    l.step_cost = step_cost;
    l.step_bandwidth = step_bandwidth;
    b.add_link(std::move(l));
  }
  return Check(std::move(b).Build());
}

Topology Star(int n, double bandwidth, double latency) {
  TopologyBuilder b(Numbered("star", n));
  for (int i = 0; i < n; ++i) b.add_device(MakeDevice(Numbered("d", i)));
  const NodeId sw = b.add_switch({"switch", "h0"});
  for (int i = 0; i < n; ++i) b.add_bidirectional_link(i, sw, bandwidth, latency, "nvswitch");
  return Check(std::move(b).Build());
}

Topology TwoHosts(int per_host, double bandwidth, double latency) {
  TopologyBuilder b("twohosts");
  for (int i = 0; i < 2 * per_host; ++i) {
    Device d = MakeDevice(Numbered("d", i));
    d.host = i < per_host ? "h0" : "h1";
    b.add_device(d);
  }
  const NodeId s0 = b.add_switch({"sw0", "h0"});
  const NodeId s1 = b.add_switch({"sw1", "h1"});
  for (int i = 0; i < 2 * per_host; ++i)
    b.add_bidirectional_link(i, i < per_host ? s0 : s1, bandwidth, latency, "pcie");
  b.add_bidirectional_link(s0, s1, bandwidth / 4, latency * 4, "ethernet");
  return Check(std::move(b).Build());
}

double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
int32_t UniformInt(std::mt19937_64& rng, int32_t n) { return static_cast<int32_t>(rng() % static_cast<uint64_t>(n)); }

Graph RandomTrainingGraph(uint64_t seed, int ops) {
  std::mt19937_64 rng(seed);
  GraphBuilder b(Numbered("random", seed));
  std::vector<OpId> prev_layer;
  int made = 0;
  while (made < ops) {
    const int width = 1 + UniformInt(rng, 4);
    std::vector<OpId> layer;
    for (int k = 0; k < width && made < ops; ++k, ++made) {
      const int64_t batch = 8, features = 16 << UniformInt(rng, 4);
      Op op = MakeOp(Numbered("op", made), 1e5 * (1 + UniformInt(rng, 100)), {batch, features},
                     UniformInt(rng, 3) == 0 ? 0 : 4096 * (1 + UniformInt(rng, 64)));
      op.type = UniformInt(rng, 2) ? "matmul" : "relu";
      op.dims.push_back({DimKind::kSample, 0, 0, batch});
      op.dims.push_back({DimKind::kAttribute, 1, 1, features});
      if (op.param_bytes > 0) op.dims.push_back({DimKind::kReduction, -1, 1, 4});
      const OpId id = b.add_op(std::move(op));
      if (!prev_layer.empty()) {
        const int fan_in = 1 + UniformInt(rng, std::min<int>(3, static_cast<int>(prev_layer.size())));
        std::vector<OpId> from = prev_layer;
        for (int f = 0; f < fan_in; ++f) {
          const int pick = UniformInt(rng, static_cast<int32_t>(from.size()));
          b.add_edge(from[pick], id);
          from.erase(from.begin() + pick);
        }
      }
      layer.push_back(id);
    }
    prev_layer = layer;
  }
  Graph forward = Check(std::move(b).Build());
  return Check(DeriveTrainingGraph(forward));
}

OpConfig RandomConfig(const Graph& graph, OpId op, int num_devices, double p_partition, std::mt19937_64& rng) {
  const Op& o = graph.op(op);
  OpConfig c;
  if (o.dims.empty() || Uniform(rng) >= p_partition) {
    c.devices = {UniformInt(rng, num_devices)};
    return c;
  }
  c.degrees.assign(o.dims.size(), 1);
  int parts = 1;
  for (size_t j = 0; j < o.dims.size(); ++j) {
    const int options[] = {1, 2, 4};
    const int d = options[UniformInt(rng, 3)];
    if (parts * d <= num_devices && d <= o.dims[j].size) {
      c.degrees[j] = d;
      parts *= d;
    }
  }
  std::vector<DeviceId> devices(static_cast<size_t>(num_devices));
  std::iota(devices.begin(), devices.end(), 0);
  for (int i = num_devices - 1; i > 0; --i) std::swap(devices[i], devices[UniformInt(rng, i + 1)]);
  c.devices.assign(devices.begin(), devices.begin() + parts);
  return c;
}

Strategy RandomStrategy(const Graph& graph, int num_devices, double p_partition, std::mt19937_64& rng) {
  Strategy s;
  for (OpId i = 0; i < graph.num_ops(); ++i) s.configs.push_back(RandomConfig(graph, i, num_devices, p_partition, rng));
  return s;
}

void ExpectSameResult(const SimResult& a, const SimResult& b, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(a.step_time, b.step_time);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (size_t d = 0; d < a.devices.size(); ++d) {
    SCOPED_TRACE("device " + std::to_string(d));
    EXPECT_EQ(a.devices[d].busy_seconds, b.devices[d].busy_seconds);
    EXPECT_EQ(a.devices[d].utilisation, b.devices[d].utilisation);
    EXPECT_EQ(a.devices[d].static_bytes, b.devices[d].static_bytes);
    EXPECT_EQ(a.devices[d].peak_bytes, b.devices[d].peak_bytes);
    EXPECT_EQ(a.devices[d].overage_bytes, b.devices[d].overage_bytes);
    EXPECT_EQ(a.devices[d].num_tasks, b.devices[d].num_tasks);
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t l = 0; l < a.links.size(); ++l) {
    SCOPED_TRACE("link " + std::to_string(l));
    EXPECT_EQ(a.links[l].busy_seconds, b.links[l].busy_seconds);
    EXPECT_EQ(a.links[l].bytes, b.links[l].bytes);
    EXPECT_EQ(a.links[l].num_tasks, b.links[l].num_tasks);
  }
  EXPECT_EQ(a.oom, b.oom);
  EXPECT_EQ(a.oom_messages, b.oom_messages);
  EXPECT_EQ(a.bytes_moved, b.bytes_moved);
  EXPECT_EQ(a.num_tasks, b.num_tasks);
  EXPECT_EQ(a.num_compute_tasks, b.num_compute_tasks);
  EXPECT_EQ(a.cost_fallbacks, b.cost_fallbacks);
  EXPECT_EQ(a.critical_path, b.critical_path);
  EXPECT_EQ(a.critical_compute_seconds, b.critical_compute_seconds);
}

}  // namespace devplace::testing
