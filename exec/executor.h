// The executor: runs one training step of a graph for real, obeying a strategy. Every op becomes LibTorch
// computation with the op's shapes (convolutions, matmuls, LSTM cells, attention, embeddings, pooling,
// normalisation, element-wise ops, concatenation, softmax and losses, their backward ops, and Adam updates);
// an op whose computation cannot be reconstructed runs a stand-in kernel with the same FLOPs and output size,
// and the result counts them. One worker thread per device runs its ops as soon as their inputs have arrived;
// a tensor crossing devices is really copied (the consuming worker copies it into its own memory before running
// the op: a fresh buffer on the CPU, a peer copy between GPUs on CUDA).
// This header is LibTorch-free; see docs/executor.md for the model, the CUDA build and the limits.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

class ProcessGroup;  // distributed/process_group.h
struct PipelinePlan;  // core/pipeline.h

// Settings of an execution.
struct ExecOptions {
  int32_t warmup_steps = 2;   // untimed steps first (allocator, caches, first-touch)
  int32_t timed_steps = 5;    // timed steps; the result reports their median and spread
  // "cpu": one worker thread per topology device, each pinned to its own core (device d -> core d mod cores).
  // "cuda": the topology's GPU devices (every kind but "cpu") run on cuda:0, cuda:1, ... in device order, and its
  // devices of kind "cpu" on pinned CPU workers (GPU+CPU placements: tensors cross PCIe). "auto": cuda when
  // LibTorch has CUDA and the topology has a GPU device, else cpu. A cuda request without CUDA, or for a topology
  // of CPU devices only, runs on the CPU with a one-line note.
  std::string backend = "auto";
  uint64_t seed = 0;           // seeds inputs and weights (per op, so results do not depend on placement)
  bool pin_threads = true;     // pin CPU workers to cores
  bool record_checksums = false;  // keep a checksum of every op's produced tensors in the last step
  bool record_values = false;     // keep every op's value in the last step (ExecResult::op_values)
};

// Checks option values; errors name the field.
Status ValidateExecOptions(const ExecOptions& options);

// What the backend resolved to.
struct BackendInfo {
  std::string name;        // "cpu", "cuda" (every device on a GPU) or "cuda+cpu" (GPU and CPU devices)
  std::string note;        // one line when the request could not be honoured (e.g. no CUDA), else empty
  int32_t cpu_cores = 0;   // cores this process may use
  int32_t cuda_devices = 0;
  // Per topology device, the CUDA device it runs on, or -1 for a CPU worker; empty exactly when every device runs on
  // the CPU (name "cpu"). Multi-process ranks print it in their JSON (`cuda_index`); the launcher carries it over.
  std::vector<int32_t> cuda_index;
};

// Resolves options.backend for `topology` (see ExecOptions::backend). Errors on an unknown name, or when the
// CUDA backend has fewer GPUs than the topology has GPU devices.
Expected<BackendInfo> ResolveBackend(const std::string& backend, const Topology& topology);

// One collective of a step (partitioned strategies: reduce-scatters of partial sums, gradient all-reduces), timed from
// its first step's start to its last step's end (median over the timed steps).
struct CollectiveTime {
  std::string kind;   // "all-reduce", "reduce-scatter", ...
  std::string label;  // the op it serves
  std::vector<DeviceId> devices;
  int64_t bytes = 0;  // the tensor's size, as sim/collectives.h counts it
  double seconds = 0.0;       // first step's start to last step's end (includes waiting for busy workers)
  double busy_seconds = 0.0;  // the summed time of its steps (copying and adding chunks)
};

// A pipeline plan's stage step as one device ran it (Executor::CreatePipeline): the forward or backward of a
// micro-batch, or the stage's weight update (microbatch -1), from its first compute task's start to its last's end.
struct PipelineStepTime {
  DeviceId device = 0;
  int32_t stage = 0;
  bool forward = true;
  int32_t microbatch = -1;
  double start = 0.0, end = 0.0;  // seconds since the step's start
};

// The outcome of an execution.
struct ExecResult {
  BackendInfo backend;
  std::vector<double> step_seconds;   // each timed step: first op start to last op end
  double median_step = 0.0;
  double min_step = 0.0;
  double max_step = 0.0;
  double spread = 0.0;                // (max - min) / median of the timed steps
  // Per device (indexed by DeviceId), medians over the timed steps: time computing ops, and time spent
  // copying in tensors from other devices (done by the consuming worker).
  std::vector<double> device_busy_seconds;
  std::vector<double> device_copy_seconds;
  std::vector<int32_t> device_ops;    // ops placed on each device
  int64_t bytes_copied = 0;           // per step, between devices
  int32_t num_copies = 0;             // per step
  int32_t stand_in_ops = 0;           // ops that ran a stand-in kernel
  std::vector<std::string> stand_in_types;  // their distinct types, sorted
  // Per op (indexed by OpId), medians over the timed steps: the op's kernel time, and the time its worker then
  // spends handing the outputs on and releasing the inputs (copying in inputs from other devices is not included:
  // it is device_copy_seconds).
  std::vector<double> op_seconds;
  std::vector<double> op_handoff_seconds;
  std::vector<char> op_stand_in;      // per op: 1 when it ran a stand-in kernel
  // Per op, when ExecOptions::record_checksums: the sum of every tensor the op produced in the last step
  // (forward output, input and weight gradients, updated weights), in double precision.
  std::vector<double> op_checksums;
  // Partitioned strategies: every collective of the step, in the order they were built.
  std::vector<CollectiveTime> collectives;
  // Per op, when ExecOptions::record_values: in the last step, a forward op's output (row-major over its whole
  // shape, its parts' regions put together), a backward op's weight gradient (after synchronisation; empty for ops
  // whose weight gradient no update reads: without weights, or sharing weights another op owns) and an update op's
  // new weights (flat), as 32-bit floats; empty for other ops.
  std::vector<std::vector<float>> op_values;
  // Pipeline plans, one process: every stage step of the last timed step, by device, in the order each device ran
  // them (the schedule's order).
  std::vector<PipelineStepTime> pipeline_steps;
};

// A graph, machine and strategy made ready to run: kernels built, weights and inputs allocated on their devices,
// one worker thread per used device. `graph` and `topology` must outlive the executor.
class Executor {
 public:
  // Validates the strategy (ValidateStrategy: colocated ops must share a device, which keeps an op's weights, its
  // backward op and its update together). Plain placements run op by op; a strategy that splits ops runs each op
  // part as a unit of its own with the regions core/partition.h gives it, and collectives between the parts
  // (docs/executor.md, "Partitioned execution").
  static Expected<Executor> Create(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                   const ExecOptions& options = {});
  // As Create, for one rank of a multi-process execution (docs/executor.md, "Multi-process runs"): this process
  // runs the ops (or op parts) of the devices d with rank_of_device[d] == group.rank(); a tensor (or a box of one,
  // or a collective's chunk) whose producer and consumer run on different ranks is sent over `group`. Every rank must pass the same graph, topology, strategy, options and
  // map, then call Run as often as the others. `group` must outlive the executor.
  static Expected<Executor> CreateRank(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                       const ExecOptions& options, ProcessGroup& group,
                                       const std::vector<int32_t>& rank_of_device);
  // A pipeline plan (core/pipeline.h; docs/executor.md, "Pipelines"): every micro-batch's forward and backward of
  // each stage on the stage's devices (the plan run as MicrobatchStrategy, exec/pipeline.h), each device's stage
  // steps in the schedule's order, weight gradients accumulated over the micro-batches and all-reduced over the
  // stage's devices once per step, one update per step. Errors are one line: ValidatePipelinePlan's, and what
  // MicrobatchStrategy refuses.
  static Expected<Executor> CreatePipeline(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                                           const ExecOptions& options = {});
  Executor(Executor&&) noexcept;
  Executor& operator=(Executor&&) noexcept;
  ~Executor();

  // Runs options.warmup_steps + options.timed_steps training steps and reports the timed ones. The first step
  // checks every kernel's output shapes against the graph (an error names the op). May be called again.
  // On a rank of a multi-process execution every step starts at a barrier of all ranks, a step's time is the
  // longest over the ranks from there to their last op's end, and every rank returns the whole result (per-op
  // and per-device numbers from the rank running them); a peer that dies or stalls for the group's timeout makes
  // it return an error on every rank.
  Expected<ExecResult> Run();

 private:
  struct Impl;
  struct Partitioned;
  explicit Executor(std::unique_ptr<Impl> impl);
  static Expected<Executor> CreateIn(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                     const ExecOptions& options, ProcessGroup* group,
                                     const std::vector<int32_t>& rank_of_device);
  explicit Executor(std::unique_ptr<Partitioned> parts);
  // With `pipeline`, `strategy` is its MicrobatchStrategy and the steps are scheduled as the plan says.
  static Expected<Executor> CreatePartitioned(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                              const ExecOptions& options, const BackendInfo& backend,
                                              ProcessGroup* group, const std::vector<int32_t>& rank_of_device,
                                              const PipelinePlan* pipeline = nullptr);
  Expected<ExecResult> RunPartitioned();
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<Partitioned> parts_;
};

// Create + Run.
Expected<ExecResult> ExecuteStrategy(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                     const ExecOptions& options = {});
// CreatePipeline + Run.
Expected<ExecResult> ExecutePipeline(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                                     const ExecOptions& options = {});

}  // namespace devplace
