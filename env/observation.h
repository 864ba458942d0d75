// What a policy sees of a placement state. Nodes are colocation groups (core/colocation.h), edges the
// data flow between groups. Feature dimensions are fixed constants, identical for every graph and topology, so one
// policy can train on many. Every feature is normalised per graph (or per machine) to about [0, 1]; the exact
// definitions are listed here and in docs/environments.md.
#pragma once

#include <cstdint>
#include <vector>

namespace devplace {

// Node (group) feature columns. "log-scaled" x means log1p(x) / log1p(max over the graph's groups of x)
// (0 when the max is 0).
enum NodeFeature : int32_t {
  kNodeLogFlops = 0,        // log-scaled sum of the members' FLOPs
  kNodeLogOutputBytes,      // log-scaled sum of the members' output bytes
  kNodeLogParamBytes,       // log-scaled sum of the members' parameter bytes
  kNodeForwardFraction,     // fraction of members with role forward
  kNodeBackwardFraction,    // ... backward
  kNodeUpdateFraction,      // ... update
  kNodeLogInDegree,         // log-scaled number of distinct predecessor groups
  kNodeLogOutDegree,        // log-scaled number of distinct successor groups
  kNodeTopoPosition,        // group id / (num_groups - 1) (groups are numbered topologically); 0 if one group
  kNodeComputeShare,        // the group's compute time on the reference device / the graph's total there
  kNodeMemoryShare,         // the group's estimated memory / the graph's total estimated memory
  kNodeIsCurrent,           // 1 for the group the next action places, else 0
  kNodeIsPlaced,            // 1 when the group has a device, else 0
  kNodeFeatureDim           // number of columns
};

// Device feature columns.
enum DeviceFeature : int32_t {
  kDevicePeakFlops = 0,     // the device's f32 peak FLOP/s / the largest on the machine
  kDeviceMemoryBandwidth,   // memory bandwidth / the largest on the machine
  kDeviceCapacity,          // memory capacity / the graph's total estimated memory, capped at 4
  kDeviceComputeLoad,       // compute time of the groups placed on the device (priced on it) / the graph's
                            // total compute time on the reference device, capped at 4
  kDeviceMemoryLoad,        // estimated memory of the groups placed on the device / its capacity, capped at 4
  kDeviceHost,              // index of the device's host (hosts numbered in order of first device) /
                            // (num_hosts - 1); 0 on a single host
  kDeviceFeatureDim         // number of columns
};

// Split-candidate feature columns (PlacementGame::candidate_features: static, one row per group and candidate,
// env/candidates.h), the inputs that make partitioning learnable across graphs and machines. With t = the group's
// compute time on the reference device, saved = t - the slowest part's time, sync = split_sync_seconds,
// reshard = split_reshard_seconds, cost = saved + sync + reshard. A row is all 0 when the group cannot take the
// candidate.
enum CandidateFeature : int32_t {
  kCandidateLegal = 0,        // 1 when the group can take the candidate (PlacementGame::can_split)
  kCandidateSample,           // one-hot of the candidate's dimension kind (all 0 for the kind-less
  kCandidateAttribute,        //   data-parallel candidate)
  kCandidateParameter,        //
  kCandidateReduction,        //
  kCandidateSubsetSize,       // subset size / num_devices
  kCandidateSubsetHosts,      // hosts the subset spans / hosts of the machine
  kCandidateComputeSaved,     // saved / t, clamped to [0, 1] (0 when t is 0)
  kCandidateNetGain,          // N (saved - sync - reshard) / (4 x the graph's total reference compute time),
                              // clamped to [-1, 1] (N = number of groups)
  kCandidateSyncShare,        // sync / cost (0 when cost is 0)
  kCandidateReshardShare,     // reshard / cost (0 when cost is 0)
  kCandidateMemoryPerDevice,  // split_memory_bytes / the smallest capacity in the subset, capped at 4
  kCandidateMemoryRatio,      // split_memory_bytes / group_memory_bytes, capped at 1 (1 when the group has none)
  kCandidateLinkSpeed,        // the machine's fastest device-pair transfer of 1 MiB / the subset ring's slowest
                              // hop for 1 MiB (Topology::transfer_time_estimate), in (0, 1]
  // Columns as if the neighbours took the same candidate (PlacementGame::split_uniform_reshard_seconds: the
  // resharding left when every neighbour group that can take the candidate does; a data-parallel chain has none),
  // with ucost = saved + sync + uniform reshard:
  kCandidateUniformNetGain,   // N (saved - sync - uniform reshard) / (4 x total reference compute), in [-1, 1]
  kCandidateUniformReshardShare,  // uniform reshard / ucost (0 when ucost is 0)
  kCandidateNeighbourLegal,   // bytes of the group's edges to other groups that can take the candidate / bytes of
                              // all its edges to other groups (1 when it has none)
  // Graph-level columns of sample-kind candidates (0 for the other kinds; PlacementGame::uniform_step_time): the
  // simulated step time u when every group that can take the candidate does, the others on the reference device.
  kCandidateUniformSpeedup,   // log(reference time / u) / log(num_devices), clamped to [-1, 1] (0 on one device)
  kCandidateUniformBest,      // the smallest u over the sample-kind candidates / u, in (0, 1]
  // Columns with the resharding to unsplit neighbours priced as transfers to and from the one device they run on
  // (PlacementGame::split_star_reshard_seconds, neighbours on the reference device; star = that estimate,
  // scost = saved + sync + star); 0 unless EnvConfig::star_reshard:
  kCandidateStarNetGain,        // N (saved - sync - star) / (4 x total reference compute), in [-1, 1]
  kCandidateStarReshardShare,   // star / scost (0 when scost is 0)
  kCandidateUniformStarNetGain, // the same with split_uniform_star_reshard_seconds, in [-1, 1]
  kCandidateFeatureDim          // number of columns
};
// The columns of the first SOAP feature set (up to kCandidateLinkSpeed), which policies trained before the uniform
// columns read (PolicyConfig::candidate_features).
inline constexpr int32_t kCandidateFeatureDimV1 = kCandidateLinkSpeed + 1;
// The columns up to kCandidateUniformBest, which policies trained before the star columns read
// (models/soap-uniform, models/soap-ring).
inline constexpr int32_t kCandidateFeatureDimV2 = kCandidateUniformBest + 1;

// One observation, filled in place by PlacementState::FillObservation (vectors are resized, so a reused
// Observation allocates nothing after the first fill for a given game).
struct Observation {
  int32_t num_nodes = 0;
  int32_t node_feature_dim = kNodeFeatureDim;
  std::vector<float> node_features;  // row-major [num_nodes x node_feature_dim]
  // Group-level edges edge_src[k] -> edge_dst[k] (PlacementGame::edge_src/edge_dst): deduplicated, no self
  // loops, sorted by (src, dst); may contain cycles (a forward edge and its gradient edge between two groups).
  std::vector<int32_t> edge_src, edge_dst;
  int32_t num_devices = 0;
  int32_t device_feature_dim = kDeviceFeatureDim;
  std::vector<float> device_features;  // row-major [num_devices x device_feature_dim]
  std::vector<int32_t> placement;      // action per node: a device, a split action (>= num_devices), -1 unplaced
  int32_t current_node = -1;           // the node the next action places; -1 when terminal
  std::vector<uint8_t> legal_mask;     // 1 per legal action for current_node (all 0 when terminal); devices,
                                       // then the game's split actions
};

}  // namespace devplace
