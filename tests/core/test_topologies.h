// Topologies shared by the core tests of device orders and mesh layouts.
#pragma once

#include <string>
#include <vector>

#include "core/topology.h"

namespace devplace::testing {

// p100-4x4-ib with the hosts dealt round-robin over the ids (device d on host d % 4): 16 P100s, NVLink between the
// four of a host, each host's PCIe switch (12 GB/s) on one InfiniBand switch (12.5 GB/s). Id order crosses hosts at
// every step.
inline Topology InterleavedHosts() {
  constexpr int kHosts = 4, kDevices = 16;
  TopologyBuilder b("p100-interleaved");
  for (int d = 0; d < kDevices; ++d)
    b.add_device(Device{.name = "gpu" + std::to_string(d), .kind = "p100", .host = "node" + std::to_string(d % kHosts),
                        .peak_flops_f32 = 10.6e12, .memory_bandwidth = 732e9, .memory_bytes = int64_t{16} << 30});
  std::vector<NodeId> pcie;
  for (int h = 0; h < kHosts; ++h) pcie.push_back(b.add_switch(Switch{"node" + std::to_string(h) + "-pcie",
                                                                      "node" + std::to_string(h)}));
  const NodeId ib = b.add_switch(Switch{"ib", "fabric"});
  for (int d = 0; d < kDevices; ++d) {
    b.add_bidirectional_link(d, pcie[d % kHosts], 12e9, 1.5e-6, "pcie");
    for (int e = d + kHosts; e < kDevices; e += kHosts) b.add_bidirectional_link(d, e, 20e9, 2e-6, "nvlink");
  }
  for (NodeId s : pcie) b.add_bidirectional_link(s, ib, 12.5e9, 1e-6, "infiniband");
  return std::move(b).Build().value();
}

}  // namespace devplace::testing
