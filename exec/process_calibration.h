// Calibration of a multi-process group (docs/executor.md, "Calibration"): point-to-point transfers and the
// collectives (ring all-reduce, all-gather) between processes over c10d, fitted to the simulator's per-step model
// time = alpha + bytes x beta, and written into a topology as the latency (alpha) and bandwidth (1 / beta) of the
// links between devices that different ranks run - the simulator decomposes a ring collective over p devices into
// per-link steps of n / p bytes, so those links then price the measured collectives. LibTorch-free header.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "core/topology.h"
#include "distributed/config.h"
#include "exec/calibration.h"

namespace devplace {

struct GroupCalibrationOptions {
  int64_t min_bytes = int64_t{1} << 10;  // message sizes: powers of 4 from min_bytes to max_bytes
  int64_t max_bytes = int64_t{16} << 20;
  int32_t repeats = 9;                   // timed operations per size (the median is kept)
  // The executor's own messages (GroupCalibration::messages) are measured up to min(max_bytes, this), in chains of
  // `chain` cross-process edges.
  int64_t max_message_bytes = int64_t{4} << 20;
  int32_t chain = 16;
};

// One fitted operation: per step of the ring decomposition, time = latency + bytes / bandwidth (alpha = latency,
// beta = 1 / bandwidth); points are (bytes per step, seconds per step), the longest over the ranks.
struct GroupCalibration {
  int32_t processes = 0;
  PairCalibration send;        // rank 0 -> rank 1 one way (half a ping-pong of equal sizes); one step
  PairCalibration all_reduce;  // n bytes over p ranks: 2 (p - 1) steps of n / p bytes
  PairCalibration all_gather;  // n bytes gathered (n / p per rank): p - 1 steps of n / p bytes
  // The executor's cross-process edges (measured when a topology is given): per size, two plain strategies of one
  // chain of element-wise ops over a tensor of that size run as ranks of the group, one alternating between a
  // device of rank 0 and one of rank 1 at every op (`chain` messages), one crossing once; the difference of their
  // step times over chain - 1 is one message's cost (the header and the tensor over c10d, the receiving thread's
  // hand-over to a busy-polling worker), points (bytes, seconds per message).
  PairCalibration messages;
};

// Joins the group `config` describes (world_size >= 2) and measures it; with `topology` (whose devices map to the
// ranks as RankOfDevices maps them) also the executor's messages. Every rank must call it with the same options
// and topology, and every rank gets the result. Errors: a rendezvous or operation that fails or times out (one line
// naming the rank), an execution that fails.
Expected<GroupCalibration> CalibrateProcessGroup(const DistributedConfig& config,
                                                 const GroupCalibrationOptions& options = {},
                                                 const Topology* topology = nullptr);

// `topology` with every link on a route of h links between devices of different ranks (rank_of_device, as
// RankOfDevices maps them) set from the executor's messages (alpha + bytes / B per message) and the one-way send
// (latency a): latency a / h, per-message cost max(0, alpha - a) / h and bandwidth h x B, so that a transfer
// between the ranks costs alpha + bytes / B; and from the process group's all-reduce (alpha_s + bytes / B_s per
// ring step; the executor runs collectives between processes on the group): per-step cost max(0, alpha_s - a) / h
// and step bandwidth h x B_s, so that a ring step between the ranks costs alpha_s + bytes / B_s (the simulator
// prices a step at latency + step cost + bytes / step bandwidth per hop). A link on several such routes gets the
// mean. Other links and the devices are unchanged. Errors when the messages were not measured, or when the message
// or all-reduce fit is unphysical (CheckPhysicalFit).
Expected<Topology> ApplyGroupCalibration(const Topology& topology, const std::vector<int32_t>& rank_of_device,
                                         const GroupCalibration& calibration);

}  // namespace devplace
