// The machine: compute devices, non-compute switches (PCIe switches, host bridges, NICs, NVSwitch),
// and directed links between them. Routes between every pair of devices are precomputed at build time.
// Units inside the program are SI: bytes, seconds, FLOP/s, bytes/s. The YAML format (docs/topology-format.md)
// uses friendlier units (GB/s, us, TFLOP/s, GiB).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/graph.h"
#include "core/status.h"

namespace devplace {

using DeviceId = int32_t;
using NodeId = int32_t;  // devices are nodes [0, num_devices); switches follow
using LinkId = int32_t;

// A compute device.
struct Device {
  std::string name;                  // unique, e.g. "gpu0"
  std::string kind;                  // model key used by cost models, e.g. "v100", "k80", "cpu"
  std::string host;                  // machine the device lives in
  double peak_flops_f32 = 0.0;       // FLOP/s at 32-bit
  double peak_flops_f16 = 0.0;       // FLOP/s at 16-bit (tensor cores); equals f32 when not given
  double memory_bandwidth = 0.0;     // bytes/s
  int64_t memory_bytes = 0;          // capacity
};

// Peak FLOP/s of `device` for an op computing in `dtype`.
double PeakFlops(const Device& device, DType dtype);

// A non-compute node that links pass through.
struct Switch {
  std::string name;
  std::string host;
};

// A directed link between two nodes. Each link direction is one FIFO resource in the simulator.
struct Link {
  NodeId src = 0;
  NodeId dst = 0;
  double bandwidth = 0.0;  // bytes/s
  double latency = 0.0;    // s
  std::string kind;        // "nvlink", "pcie", "nvswitch", "infiniband", "ethernet", "qpi", "memcpy", ...
  // Fixed costs the executor pays per use of the link, as busy time of the hop's resource (the link; on a "memcpy"
  // link the receiving core) on top of bytes / bandwidth (docs/simulator.md, "Per-message and per-step costs").
  // Both default to 0, which leaves a topology priced as before.
  double message_cost = 0.0;  // s, per message: every hop of a transfer (e.g. the c10d send/receive between two
                              // processes)
  double step_cost = 0.0;     // s, per collective step, instead of the message cost (wake-up, buffer, copy-and-add;
                              // between processes a step of the process group's collective)
  double step_bandwidth = 0.0;  // bytes/s a collective step moves (copies and adds) at; 0: `bandwidth`
};

// Immutable, validated machine model built by TopologyBuilder::Build.
class Topology {
 public:
  Topology() = default;

  const std::string& name() const { return name_; }
  int32_t num_devices() const { return static_cast<int32_t>(devices_.size()); }
  int32_t num_switches() const { return static_cast<int32_t>(switches_.size()); }
  int32_t num_nodes() const { return num_devices() + num_switches(); }
  int32_t num_links() const { return static_cast<int32_t>(links_.size()); }
  const Device& device(DeviceId id) const { return devices_[id]; }
  const std::vector<Device>& devices() const { return devices_; }
  const Switch& switch_node(NodeId node) const { return switches_[node - num_devices()]; }
  const std::vector<Switch>& switches() const { return switches_; }
  const Link& link(LinkId id) const { return links_[id]; }
  const std::vector<Link>& links() const { return links_; }
  // Name of a node (device or switch).
  const std::string& node_name(NodeId node) const;

  // The links a transfer from device `src` to device `dst` traverses, in order (empty when src == dst).
  std::span<const LinkId> route(DeviceId src, DeviceId dst) const;
  // Time to move `bytes` from src to dst on an idle machine with store-and-forward per hop
  // (sum of latencies and per-message costs + bytes / bottleneck bandwidth); a quick estimate used by heuristics.
  double transfer_time_estimate(DeviceId src, DeviceId dst, int64_t bytes) const;
  // The device with this name, or -1.
  DeviceId find_device(std::string_view name) const;

 private:
  friend class TopologyBuilder;
  std::string name_;
  std::vector<Device> devices_;
  std::vector<Switch> switches_;
  std::vector<Link> links_;
  std::vector<int32_t> route_offsets_;  // (src * num_devices + dst) -> range in route_links_
  std::vector<LinkId> route_links_;
  std::unordered_map<std::string, DeviceId> device_by_name_;
};

// One point-to-point move of `bytes` from device `src` to device `dst`.
struct Transfer {
  DeviceId src = 0;
  DeviceId dst = 0;
  int64_t bytes = 0;
};

// An estimate of the time `transfers` take when started together on an idle machine: each directed link moves the
// bytes of every transfer routed over it one after another (so transfers sharing a link, e.g. a broadcast from one
// device over its PCIe uplink, add up, and transfers over disjoint links overlap): the busiest link's bytes /
// bandwidth, plus the largest route latency (latencies and per-message costs) of a transfer that moves. Transfers
// with src == dst or no bytes cost nothing; 0 when nothing moves.
double ConcurrentTransferTime(const Topology& topology, std::span<const Transfer> transfers);

// Accumulates devices, switches and links, then validates and computes routes.
class TopologyBuilder {
 public:
  explicit TopologyBuilder(std::string name = "machine") : name_(std::move(name)) {}

  DeviceId add_device(Device device);
  // Switches must be added after all devices (node ids of switches follow the devices).
  NodeId add_switch(Switch node);
  void add_link(Link link);
  // Adds the two directions of a link with identical parameters.
  void add_bidirectional_link(NodeId a, NodeId b, double bandwidth, double latency, const std::string& kind);
  // Node id of a device or switch by name, or -1.
  NodeId find_node(std::string_view name) const;

  // Validates (unique names, positive peak/bandwidth/capacity, links between known nodes with positive
  // bandwidth and non-negative latency, message and step costs, every device reachable from every other) and
  // computes routes:
  // the path minimising sum(latency + 1 MiB / bandwidth), ties broken by fewer hops, then lower link ids.
  Expected<Topology> Build() &&;

 private:
  std::string name_;
  std::vector<Device> devices_;
  std::vector<Switch> switches_;
  std::vector<Link> links_;
};

}  // namespace devplace
