// Mesh layouts that follow a machine's fast links (the idea of JAX's mesh_utils.create_device_mesh): which device
// sits at which position of a mesh shape, so that the collectives along every axis run over fast links. A mesh
// declared without devices (`MeshFromShorthand`, a spec's `mesh:` without `devices`, `--mesh`) is laid out here.
#pragma once

#include <cstdint>
#include <vector>

#include "core/topology.h"

namespace devplace {

// Per-device bytes of the all-reduce a layout's axes are priced with (bandwidth-bound, a gradient bucket's scale).
inline constexpr int64_t kMeshLayoutBytes = int64_t{64} << 20;

// Seconds of a ring all-reduce of `bytes` per device along each axis of `shape` laid out row-major as `devices`
// (prod(shape) distinct devices of `topology`), every group of an axis (the positions that differ only in that
// axis, in coordinate order) at once on an idle machine: 2 (n - 1) steps of ConcurrentTransferTime with every member
// sending bytes / n to the next member of its group (the last to the first), n the axis' extent; 0 for extent 1.
std::vector<double> MeshAxisRingTimes(const Topology& topology, const std::vector<int64_t>& shape,
                                      const std::vector<DeviceId>& devices, int64_t bytes = kMeshLayoutBytes);

// `devices` (any order, none twice, prod(shape) of them) arranged over `shape` (row-major) so that every axis's
// ring all-reduce (MeshAxisRingTimes at kMeshLayoutBytes) is fast:
//  - at most one axis longer than 1: the devices in FastRingOrder (core/device_order.h);
//  - else the layout with the least sum of the axes' times among those where no axis is slower than in id order
//    (sorted devices, row-major): over every order up to 8 devices; beyond, from the best of id order, the
//    FastRingOrder of all devices, id order with every row (last axis) in FastRingOrder and, when the last axes
//    fill exactly one host each, every host's block laid out by this function (hosts in the order of their lowest
//    device), then first-improvement swaps of two positions (up to kMaxMeshLayoutSwapDevices devices).
// Ties keep the earlier layout (id order first): never slower than id order on any axis. Deterministic.
std::vector<DeviceId> FastMeshLayout(const Topology& topology, const std::vector<int64_t>& shape,
                                     std::vector<DeviceId> devices);

// Beyond this many devices FastMeshLayout keeps its best starting layout (no swaps: their count grows as n^2).
inline constexpr int64_t kMaxMeshLayoutSwapDevices = 64;

// The default devices of a mesh of `shape` on `topology` (prod(shape) <= its device count): its first prod(shape)
// devices by id, laid out by FastMeshLayout.
std::vector<DeviceId> DefaultMeshDevices(const Topology& topology, const std::vector<int64_t>& shape);

}  // namespace devplace
