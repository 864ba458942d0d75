// One measured op time: what the executor's profiler produces (exec/profiler.h) and the simulator's profiled cost
// model looks up (sim/cost_model.h CostTable), so a profile is a cost table without conversion.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"

namespace devplace {

// The time of one op signature on one device kind. The signature is (device_kind, op_type, role, dtype, shape,
// flops); the cost model matches the first five exactly and flops to a relative 1e-6. The fields after `seconds`
// describe how it was measured (set by the profiler; a cost table read from a file leaves them at their defaults).
struct OpTiming {
  std::string device_kind;
  std::string op_type;
  OpRole role = OpRole::kForward;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;  // the op's (or part's) output shape
  double flops = 0.0;          // the op's (or part's) FLOPs
  double seconds = 0.0;        // the measured time (> 0)
  double min_seconds = 0.0;    // fastest and slowest measurement behind `seconds` (profiler: see its modes)
  double max_seconds = 0.0;
  int32_t instances = 0;       // ops of the profiled graph with this signature
  bool stand_in = false;       // the op ran a stand-in kernel
  std::string example_op;      // the op that was timed
};

}  // namespace devplace
