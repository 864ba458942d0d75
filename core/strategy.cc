#include "core/strategy.h"

#include <algorithm>
#include <unordered_map>

namespace devplace {

Strategy Strategy::FromPlacement(const std::vector<DeviceId>& device_of_op) {
  Strategy s;
  s.configs.resize(device_of_op.size());
  for (size_t i = 0; i < device_of_op.size(); ++i) s.configs[i].devices = {device_of_op[i]};
  return s;
}

Strategy Strategy::AllOn(int32_t num_ops, DeviceId device) {
  return FromPlacement(std::vector<DeviceId>(static_cast<size_t>(num_ops), device));
}

bool Strategy::is_plain_placement() const {
  return std::all_of(configs.begin(), configs.end(), [](const OpConfig& c) { return c.devices.size() == 1; });
}

std::optional<OpConfig> SplitConfig(const Op& op, const std::vector<DeviceId>& devices) {
  OpConfig config;
  if (!SplitConfigInto(op, devices, &config)) return std::nullopt;
  return config;
}

bool SplitConfigInto(const Op& op, const std::vector<DeviceId>& devices, OpConfig* config) {
  const auto n = static_cast<int64_t>(devices.size());
  if (n == 0) return false;
  if (n == 1) {
    WriteSplitConfig(devices, 0, 0, 1, config);
    return true;
  }
  for (int pass = 0; pass < 2; ++pass)
    for (size_t k = 0; k < op.dims.size(); ++k)
      if ((pass == 1 || op.dims[k].kind == DimKind::kSample) && op.dims[k].size >= n) {
        WriteSplitConfig(devices, op.dims.size(), k, static_cast<int32_t>(n), config);
        return true;
      }
  return false;
}

void WriteSplitConfig(const std::vector<DeviceId>& devices, size_t num_dims, size_t dim, int32_t degree,
                      OpConfig* config) {
  config->devices.assign(devices.begin(), devices.end());
  config->shard_weights = false;
  if (degree == 1) {
    config->degrees.clear();
    return;
  }
  config->degrees.assign(num_dims, 1);
  config->degrees[dim] = degree;
}

namespace {

// Whether `devices` holds exactly the devices of `sorted` (sorted, no repeats), in any order.
bool SameDeviceSet(std::vector<DeviceId> devices, const std::vector<DeviceId>& sorted) {
  std::sort(devices.begin(), devices.end());
  return devices == sorted;
}

}  // namespace

Status ValidateStrategy(const Strategy& strategy, const Graph& graph, const Topology& topology) {
  if (static_cast<int32_t>(strategy.configs.size()) != graph.num_ops())
    return Error{"strategy has " + std::to_string(strategy.configs.size()) + " op configs but graph '" + graph.name() +
                 "' has " + std::to_string(graph.num_ops()) + " ops"};
  std::unordered_map<std::string, OpId> group_leader;
  for (OpId i = 0; i < graph.num_ops(); ++i) {
    const Op& op = graph.op(i);
    const OpConfig& c = strategy.configs[i];
    auto err = [&](const std::string& what) { return Error{"op '" + op.name + "': " + what}; };
    if (c.devices.empty()) return err("no device assigned");
    std::vector<DeviceId> sorted = c.devices;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k) {
      if (sorted[k] < 0 || sorted[k] >= topology.num_devices())
        return err("device " + std::to_string(sorted[k]) + " is not in topology '" + topology.name() + "' (" +
                   std::to_string(topology.num_devices()) + " devices)");
      if (k > 0 && sorted[k] == sorted[k - 1])
        return err("device '" + topology.device(sorted[k]).name + "' is listed twice");
    }
    if (!c.degrees.empty()) {
      if (c.degrees.size() != op.dims.size())
        return err("has " + std::to_string(c.degrees.size()) + " partition degrees but " +
                   std::to_string(op.dims.size()) + " partitionable dimensions");
      int64_t parts = 1;
      for (size_t k = 0; k < c.degrees.size(); ++k) {
        if (c.degrees[k] < 1 || c.degrees[k] > op.dims[k].size)
          return err("degree " + std::to_string(c.degrees[k]) + " for dimension " + std::to_string(k) + " (" +
                     std::string(ToString(op.dims[k].kind)) + ") must be in [1, " + std::to_string(op.dims[k].size) +
                     "]");
        parts *= c.degrees[k];
      }
      if (c.num_parts() % parts != 0)
        return err("partition degrees multiply to " + std::to_string(parts) + " parts but " +
                   std::to_string(c.num_parts()) + " devices are given (not a whole number of copies)");
    }
    if (c.shard_weights) {
      const OpId f = op.role == OpRole::kBackward ? graph.find(op.forward_op) : i;
      if (op.role == OpRole::kUpdate || f < 0 || graph.op(f).param_bytes == 0)
        return err("shard_weights is set but the op is neither a forward op with weights nor the backward op of one");
    }
    if (!op.colocation.empty()) {
      auto [it, inserted] = group_leader.emplace(op.colocation, i);
      if (!inserted && !SameDeviceSet(strategy.configs[it->second].devices, sorted))
        return err("is in colocation group '" + op.colocation + "' with '" + graph.op(it->second).name +
                   "' but placed differently");
    }
  }
  return Status::Ok();
}

}  // namespace devplace
