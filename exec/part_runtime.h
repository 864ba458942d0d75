// Internal to exec/: the state of an Executor running a strategy that splits ops (exec/part_plan.h).
#pragma once

#include <memory>

#include "exec/executor.h"
#include "exec/part_plan.h"
#include "exec/task_program.h"

namespace devplace {

struct Executor::Partitioned {
  Partitioned(const Graph& g, const Topology& t, Strategy s) : graph(g), topology(t), strategy(std::move(s)) {}
  const Graph& graph;
  const Topology& topology;
  const Strategy strategy;
  ExecOptions options;
  BackendInfo backend;
  exec::PartPlan plan;
  std::unique_ptr<exec::TaskRuntime> runtime;  // declared last: its workers stop before the plan goes
};

}  // namespace devplace
