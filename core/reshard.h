// Cross-mesh resharding (seed: Zhuang et al., "On Optimizing the Communication of Model Parallelism", MLSys 2023,
// Alpa's cross-mesh resharding): a tensor laid out by a spec on a source mesh must reach the layout of another spec
// on a destination mesh. The tensor is cut into unit communication tasks, one per data slice (the intersection of
// one source tile and one destination tile): the source devices that hold the slice can send it, the destination
// devices whose tile contains it need it. How a unit task is carried and who sends it (sim/reshard.h) is priced by
// the simulator.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/mesh.h"
#include "core/sharding.h"
#include "core/status.h"
#include "core/topology.h"

namespace devplace {

// One data slice [lo, hi) of the tensor, its bytes, the source devices holding it (ascending ids) and the
// destination devices needing it (ascending ids; a device that already holds the slice is not a receiver).
struct UnitTask {
  std::vector<int64_t> lo, hi;
  int64_t bytes = 0;
  std::vector<DeviceId> senders;
  std::vector<DeviceId> receivers;
  bool operator==(const UnitTask&) const = default;
};

// The box [lo, hi) of the tensor of shape `shape` that the device at position `flat` of `mesh` holds under `spec`
// (tensor axis a cut into ShardCount near-equal pieces: piece i is [floor(e i / c), floor(e (i + 1) / c))).
void TileOf(const std::vector<int64_t>& shape, const ShardingSpec& spec, const Mesh& mesh, int64_t flat,
            std::vector<int64_t>* lo, std::vector<int64_t>* hi);

// The unit tasks moving a tensor of `shape` with `elem_bytes` bytes per element from (src_mesh, src_spec) to
// (dst_mesh, dst_spec), in row-major order of the slices; slices every receiver already holds are left out.
// Errors when a spec is invalid for the shape and mesh (ValidateSpec with padding allowed) or partial (a pending
// sum must be reduced before it moves).
Expected<std::vector<UnitTask>> UnitTasks(const std::vector<int64_t>& shape, int64_t elem_bytes,
                                          const Mesh& src_mesh, const ShardingSpec& src_spec, const Mesh& dst_mesh,
                                          const ShardingSpec& dst_spec);

// How one unit task is carried from its sender to its receivers (priced in sim/reshard.h):
//   kSendRecv         a send of the whole slice to every receiver;
//   kAlpa             per receiving host, a send of 1/k of the slice to each of its k receivers, then a ring
//                     all-gather inside that host (Alpa's original method);
//   kGlobalAllGather  a send of 1/n of the slice to each of the n receivers, then one ring all-gather over all;
//   kBroadcast        a pipelined ring broadcast of the slice, cut into chunks, from the sender along all receivers.
enum class ReshardMethod : uint8_t { kSendRecv, kAlpa, kGlobalAllGather, kBroadcast };
// How the sender of each unit task and the order of the tasks are chosen:
//   kNaive        the lowest-id holder, tasks in slice order;
//   kLoadBalance  greedily the holder with the least load so far (its host's bytes to other hosts, then its own
//                 bytes), tasks in slice order;
//   kDfs          depth-first search over sender choices minimising the largest load, with pruning; tasks issued in
//                 rounds of disjoint hosts;
//   kRandomGreedy randomized greedy orders, each simulated, the best kept;
//   kOurs         the better (simulated) of kDfs and kRandomGreedy: the default.
enum class ReshardBalance : uint8_t { kNaive, kLoadBalance, kDfs, kRandomGreedy, kOurs };
std::string_view ToString(ReshardMethod method);
std::string_view ToString(ReshardBalance balance);
// Parses "send-recv", "alpa", "global-allgather", "broadcast" / "naive", "lb-only", "dfs", "random-greedy", "ours".
Expected<ReshardMethod> ParseReshardMethod(std::string_view text);
Expected<ReshardBalance> ParseReshardBalance(std::string_view text);

// A resharding schedule: per unit task its sender (one of its holders), and the order in which the tasks are issued
// (a permutation of the task indices; earlier tasks win ties for a link).
struct ReshardPlan {
  ReshardMethod method = ReshardMethod::kBroadcast;
  std::vector<DeviceId> sender;
  std::vector<int32_t> order;
  bool operator==(const ReshardPlan&) const = default;
};

// A spec in Alpa's notation, one comma-separated entry per tensor axis: "R" (replicated) or "S" followed by mesh
// axis indices, major to minor ("S0", "S1", "S01"). E.g. "S0,R,S1" on a 2 x 4 mesh. Errors name the entry.
Expected<ShardingSpec> ParseAlpaSpec(std::string_view text, const Mesh& mesh);
// Alpa's notation of a spec without partial sums (the inverse of ParseAlpaSpec).
std::string AlpaSpecText(const ShardingSpec& spec);

// A mesh from "RxC@K" (or "N@K"): the shape over the topology devices K, K+1, ... in id order, axes "a0", "a1",
// ...; "@K" may be left out (K = 0). Errors when it does not parse or runs past the topology's devices.
Expected<Mesh> MeshAt(std::string_view text, const Topology& topology, std::string name);

}  // namespace devplace
