#include "core/topology.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <tuple>

#include "core/check.h"

namespace devplace {

double PeakFlops(const Device& device, DType dtype) {
  bool half = dtype == DType::kF16 || dtype == DType::kBF16;
  return half && device.peak_flops_f16 > 0 ? device.peak_flops_f16 : device.peak_flops_f32;
}

const std::string& Topology::node_name(NodeId node) const {
  return node < num_devices() ? devices_[node].name : switches_[node - num_devices()].name;
}

std::span<const LinkId> Topology::route(DeviceId src, DeviceId dst) const {
  size_t k = static_cast<size_t>(src) * num_devices() + dst;
  return {route_links_.data() + route_offsets_[k], route_links_.data() + route_offsets_[k + 1]};
}

double Topology::transfer_time_estimate(DeviceId src, DeviceId dst, int64_t bytes) const {
  double latency = 0, bottleneck = std::numeric_limits<double>::infinity();
  for (LinkId l : route(src, dst)) {
    latency += links_[l].latency + links_[l].message_cost;
    bottleneck = std::min(bottleneck, links_[l].bandwidth);
  }
  return src == dst ? 0.0 : latency + static_cast<double>(bytes) / bottleneck;
}

double ConcurrentTransferTime(const Topology& topology, std::span<const Transfer> transfers) {
  std::vector<double> link_bytes(static_cast<size_t>(topology.num_links()), 0.0);
  double latency = 0.0;
  for (const Transfer& t : transfers) {
    if (t.src == t.dst || t.bytes <= 0) continue;
    double route_latency = 0.0;
    for (LinkId l : topology.route(t.src, t.dst)) {
      link_bytes[l] += static_cast<double>(t.bytes);
      route_latency += topology.link(l).latency + topology.link(l).message_cost;
    }
    latency = std::max(latency, route_latency);
  }
  double busiest = 0.0;
  for (LinkId l = 0; l < topology.num_links(); ++l) busiest = std::max(busiest, link_bytes[l] / topology.link(l).bandwidth);
  return busiest > 0.0 ? latency + busiest : 0.0;
}

DeviceId Topology::find_device(std::string_view name) const {
  auto it = device_by_name_.find(std::string(name));
  return it == device_by_name_.end() ? -1 : it->second;
}

DeviceId TopologyBuilder::add_device(Device device) {
  DEVPLACE_CHECK(switches_.empty(), "devices must be added before switches");
  devices_.push_back(std::move(device));
  return static_cast<DeviceId>(devices_.size() - 1);
}

NodeId TopologyBuilder::add_switch(Switch node) {
  switches_.push_back(std::move(node));
  return static_cast<NodeId>(devices_.size() + switches_.size() - 1);
}

void TopologyBuilder::add_link(Link link) { links_.push_back(std::move(link)); }

void TopologyBuilder::add_bidirectional_link(NodeId a, NodeId b, double bandwidth, double latency,
                                             const std::string& kind) {
  add_link(Link{a, b, bandwidth, latency, kind});
  add_link(Link{b, a, bandwidth, latency, kind});
}

NodeId TopologyBuilder::find_node(std::string_view name) const {
  for (size_t i = 0; i < devices_.size(); ++i)
    if (devices_[i].name == name) return static_cast<NodeId>(i);
  for (size_t i = 0; i < switches_.size(); ++i)
    if (switches_[i].name == name) return static_cast<NodeId>(devices_.size() + i);
  return -1;
}

namespace {

bool Positive(double x) { return x > 0 && std::isfinite(x); }

// Shortest paths from `source` by (cost, hops, last link id) with Dijkstra; returns the incoming link per node.
std::vector<LinkId> ShortestPathTree(const Topology& t, const std::vector<std::vector<LinkId>>& out_links,
                                     NodeId source) {
  using Key = std::tuple<double, int32_t, NodeId>;
  const int32_t n = t.num_nodes();
  std::vector<double> cost(n, std::numeric_limits<double>::infinity());
  std::vector<int32_t> hops(n, 0);
  std::vector<LinkId> via(n, -1);
  std::vector<char> done(n, 0);
  std::priority_queue<Key, std::vector<Key>, std::greater<>> queue;
  cost[source] = 0;
  queue.emplace(0.0, 0, source);
  constexpr double kReferenceBytes = 1 << 20;
  while (!queue.empty()) {
    auto [c, h, u] = queue.top();
    queue.pop();
    if (done[u]) continue;
    done[u] = 1;
    // Paths only pass through switches: a device other than the source is an endpoint, never a hop.
    if (u != source && u < t.num_devices()) continue;
    for (LinkId l : out_links[u]) {
      const Link& link = t.link(l);
      double nc = c + link.latency + kReferenceBytes / link.bandwidth;
      int32_t nh = h + 1;
      NodeId v = link.dst;
      if (done[v]) continue;
      if (std::tie(nc, nh) < std::tie(cost[v], hops[v]) || (nc == cost[v] && nh == hops[v] && l < via[v])) {
        cost[v] = nc;
        hops[v] = nh;
        via[v] = l;
        queue.emplace(nc, nh, v);
      }
    }
  }
  return via;
}

}  // namespace

Expected<Topology> TopologyBuilder::Build() && {
  Topology t;
  t.name_ = std::move(name_);
  t.devices_ = std::move(devices_);
  t.switches_ = std::move(switches_);
  t.links_ = std::move(links_);
  if (t.devices_.empty()) return Error{"topology '" + t.name_ + "' has no devices"};

  std::unordered_map<std::string, NodeId> names;
  for (NodeId i = 0; i < t.num_nodes(); ++i) {
    const std::string& name = t.node_name(i);
    if (name.empty()) return Error{"a device or switch has an empty name"};
    if (!names.emplace(name, i).second) return Error{"'" + name + "': duplicate device/switch name"};
  }
  for (DeviceId d = 0; d < t.num_devices(); ++d) {
    const Device& dev = t.devices_[d];
    auto err = [&](const std::string& what) { return Error{"device '" + dev.name + "': " + what}; };
    if (dev.kind.empty()) return err("kind must not be empty");
    if (!Positive(dev.peak_flops_f32)) return err("peak FLOP/s must be > 0");
    if (dev.peak_flops_f16 < 0 || !std::isfinite(dev.peak_flops_f16)) return err("f16 peak FLOP/s must be >= 0");
    if (!Positive(dev.memory_bandwidth)) return err("memory bandwidth must be > 0");
    if (dev.memory_bytes <= 0) return err("memory capacity must be > 0");
    t.device_by_name_.emplace(dev.name, d);
  }
  std::vector<std::vector<LinkId>> out_links(t.num_nodes());
  for (LinkId l = 0; l < t.num_links(); ++l) {
    const Link& link = t.links_[l];
    if (link.src < 0 || link.src >= t.num_nodes() || link.dst < 0 || link.dst >= t.num_nodes())
      return Error{"link " + std::to_string(l) + " connects an unknown node"};
    std::string label = "link " + t.node_name(link.src) + " -> " + t.node_name(link.dst) + ": ";
    if (link.src == link.dst) return Error{label + "a link must connect two different nodes"};
    if (!Positive(link.bandwidth)) return Error{label + "bandwidth must be > 0"};
    if (link.latency < 0 || !std::isfinite(link.latency)) return Error{label + "latency must be >= 0"};
    if (link.message_cost < 0 || !std::isfinite(link.message_cost)) return Error{label + "message cost must be >= 0"};
    if (link.step_cost < 0 || !std::isfinite(link.step_cost)) return Error{label + "step cost must be >= 0"};
    if (link.step_bandwidth < 0 || !std::isfinite(link.step_bandwidth))
      return Error{label + "step bandwidth must be >= 0"};
    out_links[link.src].push_back(l);
  }

  const int32_t d = t.num_devices();
  t.route_offsets_.assign(static_cast<size_t>(d) * d + 1, 0);
  for (DeviceId src = 0; src < d; ++src) {
    std::vector<LinkId> via = ShortestPathTree(t, out_links, src);
    for (DeviceId dst = 0; dst < d; ++dst) {
      size_t k = static_cast<size_t>(src) * d + dst;
      if (dst != src) {
        if (via[dst] < 0)
          return Error{"device '" + t.devices_[dst].name + "' is unreachable from device '" + t.devices_[src].name +
                       "' (add links so every device can reach every other)"};
        size_t begin = t.route_links_.size();
        for (NodeId v = dst; v != src; v = t.links_[via[v]].src) t.route_links_.push_back(via[v]);
        std::reverse(t.route_links_.begin() + static_cast<std::ptrdiff_t>(begin), t.route_links_.end());
      }
      t.route_offsets_[k + 1] = static_cast<int32_t>(t.route_links_.size());
    }
  }
  return t;
}

}  // namespace devplace
