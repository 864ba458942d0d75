// Cost models: how long one part of an op takes on one device. A CostModel is a cheap, copyable handle to an
// immutable implementation, so simulators, environments and search agents can share and copy it freely.
// Two backends: an analytic roofline model and a profiled table of measured times that falls back to the
// analytic model where it has no entry (and says so, so that a simulation can report how many fell back).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/op_timing.h"
#include "core/status.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

// The work of one part of an op: what a cost model is asked to price.
struct PartWork {
  const Op* op = nullptr;             // the op (type, role, dtype); never null when passed to a model
  std::span<const int64_t> shape;     // output shape of this part (a partial-sum part has the full box)
  double flops = 0.0;                 // FLOPs of this part (op.flops / number of parts)
  int64_t bytes_accessed = 0;         // bytes the part reads and writes: its inputs, its output, its weights
};

// The price of one part: seconds, and whether a profiled model had to fall back to the analytic estimate.
struct PartCost {
  double seconds = 0.0;
  bool fallback = false;
};

// Interface of a cost-model backend. Implementations must be immutable after construction, deterministic,
// thread-safe for concurrent calls, and return seconds > 0 for every part (the simulator relies on it).
class CostModelImpl {
 public:
  virtual ~CostModelImpl() = default;
  virtual PartCost Cost(const PartWork& work, const Device& device) const = 0;
  // One line naming the backend and its settings, for logs and result files.
  virtual std::string Describe() const = 0;
};

// Copyable handle to a shared immutable CostModelImpl. A default-constructed CostModel is the analytic model
// with default options.
class CostModel {
 public:
  CostModel();
  explicit CostModel(std::shared_ptr<const CostModelImpl> impl);

  // Price of `work` on `device`.
  PartCost Cost(const PartWork& work, const Device& device) const { return impl_->Cost(work, device); }
  // Seconds for part `part` (row-major over config.degrees, 0 <= part < config.num_parts()) of op `op` of
  // `graph` under `config`, on `device`. The part's shape, FLOPs and bytes follow the simulator's partition
  // model (docs/simulator.md).
  double ComputeTime(const Graph& graph, OpId op, const OpConfig& config, int part, const Device& device) const {
    return ComputeCost(graph, op, config, part, device).seconds;
  }
  // As ComputeTime, with whether a profiled model fell back to the analytic estimate.
  PartCost ComputeCost(const Graph& graph, OpId op, const OpConfig& config, int part, const Device& device) const;
  // Adds ComputeTime of every part p of `op` under `config` on devices[p] (one per part) to seconds[p]; parts
  // whose boxes are alike (core/partition.h PartsAlike) are priced from part 0's shape and bytes.
  void AddComputeTimes(const Graph& graph, OpId op, const OpConfig& config, std::span<const Device* const> devices,
                       double* seconds) const;
  std::string Describe() const { return impl_->Describe(); }
  const std::shared_ptr<const CostModelImpl>& impl() const { return impl_; }

 private:
  std::shared_ptr<const CostModelImpl> impl_;
};

// Settings of the analytic roofline model:
//   seconds = launch_overhead + max(flops / (PeakFlops(device, dtype) * compute_efficiency),
//                                   bytes_accessed / (device.memory_bandwidth * memory_efficiency)).
// Efficiencies and overheads may be overridden per op type, per device kind, or per (op type, device kind);
// the most specific rule wins. Defaults: compute 0.5, memory 0.7, launch overhead 5 us (typical of a
// framework-dispatched GPU kernel; CPU kernels in a framework are of the same order).
struct AnalyticCostOptions {
  double compute_efficiency = 0.5;
  double memory_efficiency = 0.7;
  double launch_overhead = 5e-6;  // seconds

  // An override; an empty op_type or device_kind matches any. Values < 0 leave the default in place.
  struct Rule {
    std::string op_type;
    std::string device_kind;
    double compute_efficiency = -1.0;
    double memory_efficiency = -1.0;
    double launch_overhead = -1.0;
    bool operator==(const Rule&) const = default;
  };
  std::vector<Rule> rules;

  bool operator==(const AnalyticCostOptions&) const = default;
};

// Checks option values (efficiencies in (0, 1], overheads >= 0 and finite); errors name the field.
Status ValidateAnalyticCostOptions(const AnalyticCostOptions& options);
// The analytic roofline model. Precondition: ValidateAnalyticCostOptions(options) is ok.
CostModel MakeAnalyticCostModel(const AnalyticCostOptions& options = {});

// A profiled cost table: measured entries plus the analytic settings used where an entry is missing.
// JSON form ("devplace.costs" version 1), documented in docs/simulator.md:
//   {"format": "devplace.costs", "version": 1,
//    "analytic": {"compute_efficiency": 0.5, "memory_efficiency": 0.7, "launch_overhead_us": 5,
//                 "rules": [{"op_type": "matmul", "device_kind": "v100", "compute_efficiency": 0.8}]},
//    "entries": [{"device_kind": "v100", "op_type": "matmul", "role": "forward", "dtype": "f32",
//                 "shape": [64, 1024], "flops": 1.3e8, "seconds": 2.1e-5}]}
// "analytic" and all of its fields are optional; unknown keys are rejected.
struct CostTable {
  AnalyticCostOptions analytic;
  std::vector<OpTiming> entries;
};

// Parses a cost table; errors read "<source>: <field path>: <reason>".
Expected<CostTable> CostTableFromJson(const std::string& text, const std::string& source);
Expected<CostTable> ReadCostTableFile(const std::string& path);
// Serialises a table (deterministic); CostTableFromJson reads it back to an equal table.
std::string CostTableToJson(const CostTable& table);
Status WriteCostTableFile(const CostTable& table, const std::string& path);

// The profiled model: exact signature matches return the measured time; misses return the analytic estimate
// with PartCost::fallback set.
CostModel MakeProfiledCostModel(CostTable table);
// Reads a cost table file and makes the profiled model from it.
Expected<CostModel> ReadCostModelFile(const std::string& path);

}  // namespace devplace
