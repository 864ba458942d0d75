// Multi-process execution (docs/executor.md, "Multi-process runs"): one process per device or per host, joined
// into a c10d process group through the torchrun environment conventions (distributed/config.h); each runs its
// devices' ops, and tensors crossing processes travel by send/recv over the group. LibTorch-free header.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "distributed/config.h"
#include "exec/executor.h"

namespace devplace {

// The rank running each device of `topology` (indexed by DeviceId) in a group of `world_size` processes:
// one process per device when world_size equals the topology's device count (rank d runs device d); else one per
// host when it equals the number of hosts (ranks in the order hosts first appear); else one per device the
// strategy uses (in device order; unused devices map to rank 0). Errors when none fits, naming the counts.
Expected<std::vector<int32_t>> RankOfDevices(const Topology& topology, const Strategy& strategy, int32_t world_size);

// Joins the group `config` describes (config.world_size >= 2; the rendezvous and every wait bounded by
// config.timeout_seconds) and executes `strategy` as rank config.rank (Executor::CreateRank, devices mapped by
// RankOfDevices), then leaves the group. Every rank gets the whole result. Errors are one line naming the rank:
// a rendezvous that times out, a peer that dies or stalls, and everything ExecuteStrategy reports.
Expected<ExecResult> ExecuteStrategyAsRank(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                           const ExecOptions& options, const DistributedConfig& config);

}  // namespace devplace
