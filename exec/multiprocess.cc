#include "exec/multiprocess.h"

#include <map>
#include <string>

#include "distributed/process_group.h"

namespace devplace {

Expected<std::vector<int32_t>> RankOfDevices(const Topology& topology, const Strategy& strategy,
                                             int32_t world_size) {
  const int32_t devices = topology.num_devices();
  std::vector<int32_t> rank(devices, 0);
  if (world_size == devices) {
    for (DeviceId d = 0; d < devices; ++d) rank[d] = d;
    return rank;
  }
  std::map<std::string, int32_t> host_rank;
  for (DeviceId d = 0; d < devices; ++d)
    rank[d] = host_rank.emplace(topology.device(d).host, static_cast<int32_t>(host_rank.size())).first->second;
  if (static_cast<int32_t>(host_rank.size()) == world_size) return rank;
  std::vector<char> used(devices, 0);
  for (const OpConfig& config : strategy.configs)
    for (DeviceId d : config.devices) used[d] = 1;
  int32_t next = 0;
  for (DeviceId d = 0; d < devices; ++d) rank[d] = used[d] ? next++ : 0;
  if (next == world_size) return rank;
  return Error{"WORLD_SIZE=" + std::to_string(world_size) + ": expected one process per device (" +
               std::to_string(devices) + "), per host (" + std::to_string(host_rank.size()) +
               ") or per device the strategy uses (" + std::to_string(next) + ") of topology '" + topology.name() +
               "'"};
}

Expected<ExecResult> ExecuteStrategyAsRank(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                           const ExecOptions& options, const DistributedConfig& config) {
  if (config.world_size < 2) return Error{"a multi-process execution needs WORLD_SIZE >= 2"};
  if (Status s = ValidateStrategy(strategy, graph, topology); !s.ok()) return s.error();
  Expected<std::vector<int32_t>> rank_of_device = RankOfDevices(topology, strategy, config.world_size);
  if (!rank_of_device) return rank_of_device.error();
  Expected<BackendInfo> backend = ResolveBackend(options.backend, topology);
  if (!backend) return backend.error();
  const ProcessGroup::Backend wire = backend->name == "cuda" && ProcessGroup::NcclAvailable()
                                         ? ProcessGroup::Backend::kNccl
                                         : ProcessGroup::Backend::kGloo;
  Expected<std::unique_ptr<ProcessGroup>> group = ProcessGroup::Connect(config, wire);
  if (!group) return group.error();
  const std::string who = (*group)->Who() + ": ";
  Expected<ExecResult> result = [&]() -> Expected<ExecResult> {
    Expected<Executor> executor = Executor::CreateRank(graph, topology, strategy, options, **group, *rank_of_device);
    if (!executor) return executor.error();
    return executor->Run();
  }();
  if (!result && result.error().message.rfind("rank ", 0) != 0) return Error{who + result.error().message};
  return result;
}

}  // namespace devplace
