// The execution simulator (FlexFlow's, extended): builds a task graph from (graph, topology, strategy, cost
// model), runs it with one FIFO resource per device and per link direction, and reports step time, busy time
// and utilisation, bytes moved, peak memory per device, OOM and the critical path.
// Simulate() is a pure function of its inputs. DeltaSimulator answers "what if op i had config c" by rebuilding
// only that op's tasks and re-timing only what the change reaches; its results equal Simulate()'s bit for bit.
// The model (partitioning, transfers, collectives, memory) is described in docs/simulator.md.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"

namespace devplace {

// Simulation settings.
struct SimOptions {
  // Transfers over routes of two or more links are cut into segments of about this many bytes (at most
  // max_segments) that move through the hops as a pipeline. Single-link transfers are one task.
  int64_t segment_bytes = int64_t{4} << 20;
  int32_t max_segments = 8;
  // Optimizer state per parameter byte, held by the devices of the update op (Adam: 2, SGD with momentum: 1).
  double optimizer_state_factor = 2.0;
  // Keep the per-task timeline in SimResult::timeline (for traces); off by default for speed.
  bool keep_timeline = false;
};

// Checks option values; errors name the field.
Status ValidateSimOptions(const SimOptions& options);

// Per-device outcome.
struct DeviceStats {
  double busy_seconds = 0.0;       // total compute time on the device
  double utilisation = 0.0;        // busy_seconds / step_time (0 when the step time is 0)
  int64_t static_bytes = 0;        // weights, gradients and optimizer state held for the whole step
  int64_t peak_bytes = 0;          // static_bytes + peak of the activations and transfer buffers alive at once
  int64_t overage_bytes = 0;       // max(0, peak_bytes - capacity)
  int32_t num_tasks = 0;           // compute tasks run on the device
};

// Per-link (per direction) outcome.
struct LinkStats {
  double busy_seconds = 0.0;
  int64_t bytes = 0;
  int32_t num_tasks = 0;
};

// One task on the timeline (kept when SimOptions::keep_timeline).
struct TimelineTask {
  enum class Kind : uint8_t { kCompute, kTransfer, kCollective };
  Kind kind = Kind::kCompute;
  OpId op = 0;            // the op computing, or the producer whose tensor moves, or the op the collective serves
  OpId consumer = -1;     // for transfers: the consuming op (of a shared transfer, the first edge's)
  int32_t part = 0;       // part index of `op` (compute) or of the producer (transfer)
  int32_t resource = 0;   // device id for compute; num_devices + link id for transfers and collective steps
  int64_t bytes = 0;      // bytes moved (transfers, collective steps)
  double start = 0.0;
  double end = 0.0;
};

// The result of a simulation.
struct SimResult {
  double step_time = 0.0;                 // seconds from the first task's start to the last task's end
  std::vector<DeviceStats> devices;       // indexed by DeviceId
  std::vector<LinkStats> links;           // indexed by LinkId
  bool oom = false;                       // some device's peak exceeds its memory
  int64_t bytes_moved = 0;                // bytes sent between devices (each transfer counted once, not per hop)
  int32_t num_tasks = 0;                  // tasks in the task graph (compute + transfer segments + collective steps)
  int32_t num_compute_tasks = 0;
  int32_t cost_fallbacks = 0;             // compute tasks a profiled cost model priced analytically
  std::vector<OpId> critical_path;        // ops of the compute tasks on the critical path, in time order
  double critical_compute_seconds = 0.0;  // time of the critical path spent computing (the rest is moving data
                                          // or waiting for a busy resource)
  std::vector<TimelineTask> timeline;     // empty unless SimOptions::keep_timeline

  // "device 'gpu3' needs 17.2 GiB, 1.2 GiB over its 16 GiB" for each OOM device (empty when none).
  std::vector<std::string> oom_messages;
};

// Simulates one training step. The strategy must fit the graph and topology (one config per op, devices in
// range, degrees matching op.dims); colocation is not required. Errors name the op.
Expected<SimResult> Simulate(const Graph& graph, const Topology& topology, const Strategy& strategy,
                             const CostModel& cost, const SimOptions& options = {});

struct StepCost;  // sim/objective.h

// A simulator bound to one graph, machine and cost model, for evaluating many strategies: it caches the price
// of every (op, device) and reuses its buffers, so Run allocates almost nothing. `graph` and `topology` must
// outlive it. Not thread-safe (use one per thread).
class Simulator {
 public:
  static Expected<Simulator> Create(const Graph& graph, const Topology& topology, CostModel cost,
                                    SimOptions options = {});
  Simulator(Simulator&&) noexcept;
  Simulator& operator=(Simulator&&) noexcept;
  ~Simulator();

  // Same result as Simulate(graph, topology, strategy, cost, options).
  Expected<SimResult> Run(const Strategy& strategy);
  // Step time only (skips the memory and critical-path analysis); OOM is not checked.
  Expected<double> RunStepTime(const Strategy& strategy);
  // The cost of `strategy` (step time, OOM and overage), equal to CostOf(*Run(strategy), topology)
  // (sim/objective.h), without the statistics, critical path, messages and timeline of a SimResult: what an
  // environment's last step needs. Does not allocate once the simulator has run strategies of the same size.
  Expected<StepCost> RunCost(const Strategy& strategy);
  // Bytes held by the simulator's buffers (task graph, timeline, cost cache) after the last run.
  int64_t memory_bytes() const;

 private:
  struct Impl;
  explicit Simulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Incremental simulator. Holds the last simulated state; SetConfig re-times only what a change reaches.
// `graph` and `topology` must outlive the object. Move-only; not thread-safe.

class DeltaSimulator {
 public:
  // Validates like Simulate and runs a full simulation.
  static Expected<DeltaSimulator> Create(const Graph& graph, const Topology& topology, Strategy strategy,
                                         CostModel cost, SimOptions options = {});
  DeltaSimulator(DeltaSimulator&&) noexcept;
  DeltaSimulator& operator=(DeltaSimulator&&) noexcept;
  ~DeltaSimulator();

  // Replaces the whole strategy (validated like Create; on error nothing changes) and simulates it afresh: the
  // same state as Create of `strategy` would give, keeping this simulator's buffers and priced ops, so that an
  // environment can reuse one simulator for episode after episode.
  Status SetStrategy(const Strategy& strategy);
  // Changes the config of `op` (validated like Simulate; on error nothing changes) and re-simulates.
  Status SetConfig(OpId op, const OpConfig& config);
  // Changes several ops at once (e.g. a colocation group); all or nothing. Made in parts of ops near each other in
  // the order, the latest first (each part stops soon after its ops; docs/simulator.md); a change in one part is
  // made whole (from a query's outcome when StepTimeIf just asked about it).
  Status SetConfigs(std::span<const std::pair<OpId, OpConfig>> changes);
  // The step time the strategy would have with `changes` made, equal to SetConfigs(changes) followed by
  // step_time(), without making them: the simulator is left as it was (what a search asks of a proposal it may
  // reject). A change of several parts (as SetConfigs makes them; docs/simulator.md) is asked about whole (only
  // swept) or by parts (every part but the earliest made, that one asked about; the next call undoes the made
  // parts first, every method, the const ones included, answering for the strategy before the query, unless it is
  // SetConfigs of the same change, which keeps them), as set_parts_queries says. Either way, making the same
  // change next with SetConfigs reuses the query's work. Validated like SetConfigs.
  Expected<double> StepTimeIf(std::span<const std::pair<OpId, OpConfig>> changes);
  Expected<double> StepTimeIf(OpId op, const OpConfig& config);
  // How StepTimeIf asks about a change of several parts: kByParts is cheaper when the earliest part's sweep stops
  // soon after it (as on 10k-op graphs), kWhole when it runs on to the end of the order anyway (as on 1k-op
  // graphs); kMeasured (the default) takes, per span of the parts in the order, the way whose queries have taken
  // less time on this simulator so far, and the other one now and then (sim/parts_query_chooser.h). The answers
  // are the same every way; only what they cost differs.
  enum class PartsQueries : uint8_t { kMeasured, kByParts, kWhole };
  void set_parts_queries(PartsQueries how);

  const Strategy& strategy() const;
  // Step time of the current strategy (cheap).
  double step_time() const;
  // Full result of the current strategy, equal to Simulate(graph, topology, strategy(), cost, options).
  SimResult result() const;
  // Whether the current strategy runs out of memory, equal to result().oom: O(devices) when every device could
  // hold all its buffers at once (an upper bound of its peak), else one pass over the order for the memory peaks
  // of the devices that could not (the only ones that may overflow), without the statistics and critical path
  // that result() assembles.
  bool oom() const;
  // The cost of the current strategy, equal to CostOf(result(), topology) (sim/objective.h), from the same
  // peaks as oom() (a device that could hold all its buffers at once adds no overage): what an environment or a
  // search needs per step.
  StepCost step_cost() const;
  // Peak bytes per device (static + dynamic), equal to result().devices[d].peak_bytes: the memory pass alone.
  std::vector<int64_t> device_peaks() const;
  // Tasks re-timed by the last SetConfig/SetConfigs call (a measure of how far the change reached).
  int64_t last_retimed_tasks() const;
  // How the sweeps since Create went (those of made changes, of their parts and of queries; for tests and tuning):
  // how many there were, how many went over to re-timing what was unsettled in one pass (changes that re-time much
  // of what they pass), how many of those stopped at a shifted rest before the end of the order, and how many were
  // re-timed along the previous order (the others, where a resource's order changed, by the plain event loop),
  // and the stretches those passes moved as a whole, without re-timing their tasks one by one.
  struct SweepCounts {
    int64_t sweeps = 0, dense = 0, dense_stopped = 0, ordered = 0, ordered_jumps = 0;
  };
  SweepCounts sweep_counts() const;
  // Compares the incremental state (the order's layout: slots, positions, per-resource slot lists and links;
  // each task's times against its inputs' and its resource's; each task's earliest and binding predecessor
  // entries; the chunk bounds the shift check skips by; the kept memory peaks' buffers) with a fresh computation
  // from the current layout, and names the first difference. O(tasks + edges); for tests and debugging.
  Status CheckIndexes() const;

 private:
  struct Impl;
  explicit DeltaSimulator(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace devplace
