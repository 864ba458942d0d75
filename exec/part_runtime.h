// Internal to exec/: the state of an Executor running a strategy that splits ops (exec/part_plan.h).
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "exec/executor.h"
#include "exec/part_plan.h"
#include "exec/part_rank.h"
#include "exec/pipeline_schedule.h"
#include "exec/process_collectives.h"
#include "exec/process_transport.h"
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
  ProcessGroup* group = nullptr;            // a rank of a multi-process execution, else null
  std::unique_ptr<exec::RankProgram> rank;  // with a group: this rank's program
  std::unique_ptr<exec::TaskRuntime> runtime;  // after the plan: its workers stop before the plan goes
  std::unique_ptr<exec::ProcessTransport> transport;  // its receivers stop before the runtime goes
  std::map<std::vector<int32_t>, std::unique_ptr<ProcessGroup>> subgroups;  // by ranks: collectives among some
  std::unique_ptr<exec::CollectiveSequencer> sequencer;  // last: a rank's process-group collectives
  double step_start = 0.0;                  // a rank's: when its step started (after the barrier)
  exec::PipelineLabels pipeline;            // a pipeline plan's stage steps (else empty)

  const exec::TaskProgram& program() const { return rank ? rank->program : plan.program; }
  // One step; a rank's sends, receives and start barrier go through the transport. Empty or the failure.
  std::string Step(int32_t step, std::vector<at::Tensor>* slots, exec::TaskTimes* times);
};

}  // namespace devplace
