// Link and device calibration: measures how long the executor takes to move a tensor between two devices (copies
// of increasing size, least-squares fit time = latency + bytes / bandwidth) and to run a step of a collective
// between them (a ring all-reduce by the executor's task runtime, fitted the same way), each device's peak FLOP/s
// (a large matmul) and memory bandwidth (a large copy), and writes them into a topology. LibTorch-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/topology.h"
#include "exec/executor.h"

namespace devplace {

struct CalibrationOptions {
  int64_t min_bytes = int64_t{1} << 10;   // copy sizes: powers of 4 from min_bytes to max_bytes
  int64_t max_bytes = int64_t{64} << 20;
  int32_t repeats = 9;                    // timed round trips per size (the median is kept)
  int64_t matmul_size = 1024;             // n of the n x n x n matmul timing peak FLOP/s (at least 8192 on a GPU)
  std::string backend = "auto";           // as ExecOptions::backend
  bool pin_threads = true;
};

// Checks option values; errors name the field.
Status ValidateCalibrationOptions(const CalibrationOptions& options);

// One copy size and its measured one-way time (producer hands the tensor over -> consumer holds its own copy).
struct CopyPoint {
  int64_t bytes = 0;
  double seconds = 0.0;
};

// The fit for one ordered device pair.
struct PairCalibration {
  DeviceId src = 0, dst = 0;
  double latency = 0.0;    // s
  double bandwidth = 0.0;  // bytes/s
  double max_relative_error = 0.0;  // of the fit over the measured points
  std::vector<CopyPoint> points;
};

struct CalibrationResult {
  BackendInfo backend;
  std::vector<PairCalibration> pairs;   // every ordered pair of the first min(4, devices) devices
  // Collective steps received by `dst` from `src`, for the same pairs: points are (bytes per step, seconds per
  // step) of a two-member ring all-reduce run by the executor's task runtime (each step a task on the receiving
  // worker that copies a chunk of the other member's freshly written tensor and adds it to its own).
  std::vector<PairCalibration> steps;
  std::vector<double> peak_flops;       // by DeviceId, f32 FLOP/s
  std::vector<double> memory_bandwidth; // by DeviceId, bytes/s (read + write of a large copy)
};

// The one-way points of a pair: round_trips[0] is the 4-byte token's round trip, round_trips[i + 1] that of
// sizes[i] (one transfer of the size plus one of the token), so a size's one-way time is its round trip minus half
// the token's. Points whose time is not positive (noise on a loaded machine) are dropped: a fit weighted by
// 1 / seconds^2 would follow them to an unphysical bandwidth.
std::vector<CopyPoint> OneWayPoints(const std::vector<int64_t>& sizes, const std::vector<double>& round_trips);

// Ok when `fit` has at least two points, a latency in (0, 1 s) and a bandwidth in (1 MB/s, 10 TB/s); else one line
// starting with `what`.
Status CheckPhysicalFit(const PairCalibration& fit, const std::string& what);

// Fits pair->latency and pair->bandwidth to pair->points (points without a positive time are ignored) (least squares of seconds = latency + bytes / bandwidth,
// weights 1 / seconds^2, i.e. relative errors) and sets pair->max_relative_error over the points.
void FitLinkModel(PairCalibration* pair);

// Measures `topology`'s devices as the executor runs them (which backend: see ExecOptions::backend).
// Errors when the topology has fewer than two devices.
Expected<CalibrationResult> Calibrate(const Topology& topology, const CalibrationOptions& options = {});

// `topology` with the measurements written in: each device's peak FLOP/s (f16 too on the CPU, which computes f16 in
// f32) and memory bandwidth; each link on a measured route of h links gets latency L / h and bandwidth h x B (the
// simulator moves a transfer hop by hop, so the route then takes L + bytes / B for transfers of one segment), a
// link on several routes the mean of their values; links on no measured route get the mean over all pairs.
// With measured steps (fit Ls + bytes / Bs per step), each such link also gets the per-step cost
// max(0, Ls - L) / h and the step bandwidth h x Bs, so that a collective step over the route costs the measured
// Ls + bytes / Bs (sim: latency + step cost + bytes / step bandwidth per hop); links on no measured route get the
// mean. Without steps, the links' step fields are kept.
Expected<Topology> ApplyCalibration(const Topology& topology, const CalibrationResult& result);

}  // namespace devplace
