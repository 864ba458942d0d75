// The op profiler: times every distinct op signature of a graph once per device kind with the executor's own
// kernels, and returns the measurement table the simulator's profiled cost model reads (core/op_timing.h: a
// profile's entries are a sim CostTable's entries). Two modes:
// - in-graph (default): the executor runs whole training steps with every op on one device of the kind (warm-up
//   steps, then timed steps); an op's time is its median kernel time plus the time its worker takes to hand the
//   outputs on, as in a real step (caches and memory as the step leaves them), and a signature's time is the mean
//   over the ops that share it.
// - isolated (FlexFlow's way): each signature's kernel alone on synthetic inputs (warm-up runs, then timed runs,
//   median), with its inputs hot in cache.
// LibTorch-free header.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/op_timing.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "exec/executor.h"

namespace devplace {

enum class ProfileMode : uint8_t { kInGraph, kIsolated };

struct ProfileOptions {
  ProfileMode mode = ProfileMode::kInGraph;
  int32_t warmup_runs = 2;   // in-graph: warm-up steps; isolated: warm-up runs per signature
  int32_t timed_runs = 7;    // in-graph: timed steps; isolated: timed runs per signature
  std::string backend = "auto";  // as ExecOptions::backend
  uint64_t seed = 0;
  bool pin_threads = true;
};

// Checks option values; errors name the field.
Status ValidateProfileOptions(const ProfileOptions& options);

struct ProfileResult {
  BackendInfo backend;
  // Per profiled device kind, "KIND: timer=T SETTINGS": T is how its op times were taken, "cuda-events" (isolated
  // mode on a GPU with LibTorch 2.x: GPU time between events around the kernel) or "wall-clock" (the monotonic
  // clock around the kernel and a device synchronisation; in-graph mode always, as the executor times a step);
  // SETTINGS, on a GPU, the precision settings the kernels ran under (TF32, float32 matmul precision).
  std::vector<std::string> kind_settings;
  std::vector<OpTiming> entries;    // in the order of the graph's first op with each signature, per device kind
  int32_t stand_in_signatures = 0;
  double seconds = 0.0;            // wall time of the profiling
};

// In-graph profile entries for device kind `kind` from runs of `graph` with every op on one device of that kind
// (e.g. runs spread over time): an op's time is the median over the runs of its median kernel plus handoff time, and
// a signature's time the mean over its ops. Precondition: every run is of `graph` (one entry per op).
std::vector<OpTiming> InGraphProfile(const Graph& graph, const std::string& kind,
                                      const std::vector<ExecResult>& runs);

// Profiles `graph` on one device of every kind in `topology` (on the CPU backend every device is a core of this
// machine, so one kind "cpu" means one pass). Errors name the op whose kernel failed.
Expected<ProfileResult> ProfileGraph(const Graph& graph, const Topology& topology, const ProfileOptions& options = {});

// Profile entries for the parts of the ops `strategy` splits (docs/executor.md, "Partitioned execution"), in
// options.mode: in-graph, whole steps of the strategy with every part on its own device's worker, as the step runs
// it (warm-up then timed steps; a part's time is its median compute time, so it includes what the step's other
// workers cost it through shared caches and memory bandwidth; a signature's time is the mean over its parts);
// isolated, each part signature's kernel alone on synthetic inputs of the part's shapes.
// The entries are keyed as the simulator looks a part up: the op's type, role and dtype, the part's output shape
// and the op's FLOPs divided by its parts.
Expected<std::vector<OpTiming>> ProfileParts(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                             const ProfileOptions& options = {});

}  // namespace devplace
