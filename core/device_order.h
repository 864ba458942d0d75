// Orders of devices for ring collectives: which device follows which so that a ring through a device list runs
// over fast links (on a DGX-1, 0 1 2 3 7 5 6 4 is an all-NVLink ring; id order crosses PCIe/QPI twice).
#pragma once

#include <cstddef>
#include <span>
#include <utility>
#include <vector>

#include "core/topology.h"

namespace devplace {

// Link loads of transfers between the devices of a fixed list (addressed by index into the list), each moving
// one byte at once over its route.
class LinkLoadMeter {
 public:
  LinkLoadMeter(const Topology& topology, const std::vector<DeviceId>& devices);

  // Seconds per byte when every transfer (i, j) of `pairs` (indices into the list) moves one byte at the same
  // time: the busiest link's sum of 1 / bandwidth over the transfers routed through it.
  double SecondsPerByte(std::span<const std::pair<size_t, size_t>> pairs);

 private:
  size_t n_;
  std::vector<std::vector<std::pair<LinkId, double>>> routes_;
  std::vector<double> load_;
  std::vector<LinkId> touched_;
};

// `devices` grouped by host: hosts in the order of their first device in `devices`, each host's devices in the
// order given.
std::vector<std::vector<DeviceId>> DevicesByHost(const Topology& topology, const std::vector<DeviceId>& devices);

// `devices` (any order, none twice, each a device of `topology`) reordered so that a ring through them in that
// order is cheapest: it minimises the per-byte time of one step of a ring collective (every device sending to
// the next at once, LinkLoadMeter), then, when the count is a power of two, the sum over the index bits of the
// per-byte time of every pair that bit separates exchanging at once (the pairs of recursive bisection).
// Exhaustive over all orders up to 8 devices (in lexicographic order from id order); beyond, first-improvement
// pairwise swaps from the better of id order and the host-grouped order (hosts in the order of their lowest
// device, each host's devices in their own FastRingOrder: a ring that enters and leaves every host once, whatever
// the ids). Ties keep the earlier order. Deterministic. Lists of up to 2 devices come back sorted.
std::vector<DeviceId> FastRingOrder(const Topology& topology, std::vector<DeviceId> devices);

}  // namespace devplace
