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
};

// One fitted operation: per step of the ring decomposition, time = latency + bytes / bandwidth (alpha = latency,
// beta = 1 / bandwidth); points are (bytes per step, seconds per step), the longest over the ranks.
struct GroupCalibration {
  int32_t processes = 0;
  PairCalibration send;        // rank 0 -> rank 1 one way (half a ping-pong of equal sizes); one step
  PairCalibration all_reduce;  // n bytes over p ranks: 2 (p - 1) steps of n / p bytes
  PairCalibration all_gather;  // n bytes gathered (n / p per rank): p - 1 steps of n / p bytes
};

// Joins the group `config` describes (world_size >= 2) and measures it; every rank must call it with the same
// options, and every rank gets the result. Errors: a rendezvous or operation that fails or times out (one line
// naming the rank).
Expected<GroupCalibration> CalibrateProcessGroup(const DistributedConfig& config,
                                                 const GroupCalibrationOptions& options = {});

// `topology` with every link on a route between devices of different ranks (rank_of_device, as RankOfDevices
// maps them) set to the all-reduce fit: latency alpha / h and bandwidth h / beta on a route of h links (as
// ApplyCalibration does), a link on several such routes the mean. Other links and the devices are unchanged.
Expected<Topology> ApplyGroupCalibration(const Topology& topology, const std::vector<int32_t>& rank_of_device,
                                         const GroupCalibration& calibration);

}  // namespace devplace
