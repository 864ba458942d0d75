// A strategy assigns every op a config: the devices its parts run on and, optionally, how many parts it is
// split into along each of its partitionable dimensions. A plain placement is one device per op.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/topology.h"

namespace devplace {

// How one op runs. `degrees`: empty (one part) or one entry >= 1 per op.dims, multiplying to P parts. Copy c of
// part p (row-major over degrees) runs on devices[c * P + p]; devices.size() = P x copies (copies run redundantly).
struct OpConfig {
  std::vector<DeviceId> devices;
  std::vector<int32_t> degrees;
  // ZeRO stage 3 / FSDP (docs/simulator.md "ZeRO"): the op's weights (a forward op's own, a backward op's forward
  // op's) are also split over its replicas (the parts of one copy that hold the same weight shard): each holds
  // 1/replicas of the shard, all-gathers the rest before it computes and frees it after, and a backward op
  // reduce-scatters its weight gradient among the replicas instead of all-reducing it. Only for forward ops with
  // weights and their backward ops (ValidateStrategy); no effect with one replica.
  bool shard_weights = false;

  int32_t num_parts() const { return static_cast<int32_t>(devices.size()); }
  bool operator==(const OpConfig&) const = default;
};

// One config per op of a graph, indexed by OpId.
struct Strategy {
  std::vector<OpConfig> configs;

  // A placement with every op on one device: configs[i] = {devices = {device_of_op[i]}}.
  static Strategy FromPlacement(const std::vector<DeviceId>& device_of_op);
  // Every op on device `device`.
  static Strategy AllOn(int32_t num_ops, DeviceId device);
  // True when every op runs on exactly one device.
  bool is_plain_placement() const;
  bool operator==(const Strategy&) const = default;
};

// The config splitting `op` evenly over `devices` (part p on devices[p]) along one dimension: its first sample
// dimension of size >= devices.size(), else its first dimension of any kind that large. Splitting along a sample
// dimension replicates the op's weights (data parallelism: each part holds them and the gradients are summed);
// other kinds shard them. One device gives the plain config {devices, {}}. std::nullopt when no dimension is
// large enough (or `devices` is empty).
std::optional<OpConfig> SplitConfig(const Op& op, const std::vector<DeviceId>& devices);
// SplitConfig written into *config, reusing the room of its lists (an environment step does not allocate once they
// have grown): returns false, leaving *config as it was, where SplitConfig gives std::nullopt.
bool SplitConfigInto(const Op& op, const std::vector<DeviceId>& devices, OpConfig* config);
// Writes into *config the config that splits an op with `num_dims` dims `degree` ways along dim `dim` over
// `devices` (part p on devices[p]; a degree of 1 gives the plain config {devices, {}}), reusing its lists' room.
void WriteSplitConfig(const std::vector<DeviceId>& devices, size_t num_dims, size_t dim, int32_t degree,
                      OpConfig* config);

// Checks that `strategy` fits `graph` and `topology`: one config per op, known devices, degree vectors that
// match the op's dims and multiply to a divisor of the device count, no device used twice by one op, colocated
// ops on the same devices. Errors name the op, e.g. "op 'fc1': device 9 is not in topology 'dgx1' (8 devices)".
Status ValidateStrategy(const Strategy& strategy, const Graph& graph, const Topology& topology);

}  // namespace devplace
