#include "exec/pipeline_schedule.h"

#include <algorithm>
#include <string>

#include "exec/collectives.h"

namespace devplace::exec {

namespace {

// A compute task on a cycle of the dependencies, or -1 when every task can run: Kahn's algorithm from the sources,
// then from the sinks of what is left (what remains lies on a cycle or between two).
int32_t TaskOnCycle(const TaskProgram& program) {
  const size_t n = program.tasks.size();
  std::vector<int32_t> preds, succs(n, 0), ready;
  std::vector<std::vector<int32_t>> pred_of(n);
  for (size_t i = 0; i < n; ++i) {
    preds.push_back(program.tasks[i].preds);
    for (int32_t next : program.tasks[i].succ) pred_of[next].push_back(static_cast<int32_t>(i));
  }
  std::vector<char> gone(n, 0);
  for (size_t i = 0; i < n; ++i)
    if (preds[i] == 0) ready.push_back(static_cast<int32_t>(i));
  while (!ready.empty()) {
    const int32_t t = ready.back();
    ready.pop_back();
    gone[t] = 1;
    for (int32_t next : program.tasks[t].succ)
      if (--preds[next] == 0) ready.push_back(next);
  }
  for (size_t i = 0; i < n; ++i)
    for (int32_t next : program.tasks[i].succ) succs[i] += !gone[i] && !gone[next];
  for (size_t i = 0; i < n; ++i)
    if (!gone[i] && succs[i] == 0) ready.push_back(static_cast<int32_t>(i));
  while (!ready.empty()) {
    const int32_t t = ready.back();
    ready.pop_back();
    gone[t] = 1;
    for (int32_t prev : pred_of[t])
      if (!gone[prev] && --succs[prev] == 0) ready.push_back(prev);
  }
  for (size_t i = 0; i < n; ++i)
    if (!gone[i] && program.tasks[i].kind == TaskKind::kCompute) return static_cast<int32_t>(i);
  return -1;
}

// Weight gradients: micro-batch m's added into micro-batch 0's on each device, then all-reduced over the stage's
// devices; the update parts on a device wait for its final sum.
void AccumulateGradients(const Graph& graph, OpId op, const std::vector<DeviceId>& devices, int32_t microbatches,
                         PartPlan* plan) {
  TaskProgram& program = plan->program;
  const Unit& first = plan->units[plan->unit_of[op][0]];
  if (first.weight_port < 0 || !UpdateReads(graph, op)) return;
  const int32_t k = static_cast<int32_t>(devices.size()), port = first.weight_port;
  const int64_t extent = first.weight_elements;
  std::vector<int32_t> final(static_cast<size_t>(k)), slots;
  for (int32_t j = 0; j < k; ++j) {
    const int32_t into = plan->units[plan->unit_of[op][j]].out_slots[port];
    slots.push_back(into);
    int32_t last = plan->task_of[op][j];
    for (int32_t m = 1; m < microbatches; ++m) {
      Task add;
      add.kind = TaskKind::kReceive;
      add.device = devices[j];
      add.src = plan->units[plan->unit_of[op][m * k + j]].out_slots[port];
      add.dst = into;
      add.length = extent;
      add.add = true;
      add.local = true;
      add.bytes = extent * 4;
      const int32_t id = program.Add(std::move(add));
      program.Dep(last, id);
      program.Dep(plan->task_of[op][m * k + j], id);
      last = id;
    }
    final[j] = last;
  }
  if (k > 1) {
    CollectiveGroup group;
    group.devices = devices;
    group.slots = slots;
    group.extent = extent;
    group.bytes = extent * 4;
    group.label = graph.op(op).name;
    final = AppendAllReduce(&program, group, final);
  }
  for (int32_t e : graph.out_edges(op)) {
    const OpId update = graph.edge(e).dst;
    if (graph.op(update).role != OpRole::kUpdate) continue;
    for (int32_t j = 0; j < k; ++j) program.Dep(final[j], plan->task_of[update][j]);
  }
}

}  // namespace

Expected<PipelineLabels> SchedulePipeline(const Graph& graph, const PipelinePlan& pipeline, PartPlan* plan) {
  Expected<std::vector<int32_t>> stage_of = AssignStages(pipeline, graph);
  if (!stage_of) return stage_of.error();
  const auto S = static_cast<int32_t>(pipeline.stages.size());
  const int32_t M = pipeline.microbatches;
  std::vector<std::vector<OpId>> forward(S), backward(S), update(S);
  for (OpId op : graph.topological_order()) {
    const OpRole role = graph.op(op).role;
    auto& list = role == OpRole::kForward ? forward : role == OpRole::kBackward ? backward : update;
    list[(*stage_of)[op]].push_back(op);
  }
  TaskProgram& program = plan->program;
  PipelineLabels labels;
  labels.step_of_task.assign(program.tasks.size(), -1);
  auto chain = [&](const std::vector<OpId>& ops, int32_t part, int32_t* prev) {
    for (OpId op : ops) {
      if (part >= static_cast<int32_t>(plan->task_of[op].size())) continue;  // a whole input: in micro-batch 0
      const int32_t t = plan->task_of[op][part];
      program.Dep(*prev, t);
      *prev = t;
      labels.step_of_task[t] = static_cast<int32_t>(labels.steps.size()) - 1;
    }
  };
  for (int32_t s = 0; s < S; ++s) {
    const std::vector<DeviceId>& devices = pipeline.stages[s].devices;
    const auto k = static_cast<int32_t>(devices.size());
    for (int32_t j = 0; j < k; ++j) {
      int32_t prev = -1;
      for (const StageStep& step : StageOrder(pipeline.schedule, S, s, M)) {
        labels.steps.push_back({devices[j], s, step.forward, step.microbatch, 0.0, 0.0});
        chain(step.forward ? forward[s] : backward[s], step.microbatch * k + j, &prev);
      }
      labels.steps.push_back({devices[j], s, false, -1, 0.0, 0.0});
      chain(update[s], j, &prev);
    }
    for (OpId op : backward[s]) AccumulateGradients(graph, op, devices, M, plan);
  }
  labels.step_of_task.resize(program.tasks.size(), -1);
  if (const int32_t t = TaskOnCycle(program); t >= 0) {
    const Unit& u = plan->units[program.tasks[t].unit];
    const int32_t k = static_cast<int32_t>(pipeline.stages[(*stage_of)[u.op]].devices.size());
    return Error{"pipeline: op '" + graph.op(u.op).name + "' of micro-batch " + std::to_string(u.part / k) +
                 " waits on a later step of its device's schedule (its data flow mixes micro-batches); this plan "
                 "cannot be executed"};
  }
  return labels;
}

std::vector<PipelineStepTime> PipelineStepTimes(const PipelineLabels& labels, const TaskTimes& times, double origin) {
  std::vector<PipelineStepTime> steps = labels.steps;
  std::vector<char> seen(steps.size(), 0);
  for (size_t t = 0; t < labels.step_of_task.size() && t < times.start.size(); ++t) {
    const int32_t i = labels.step_of_task[t];
    if (i < 0) continue;
    const double start = times.start[t] - origin, end = times.end[t] - origin;
    steps[i].start = seen[i] ? std::min(steps[i].start, start) : start;
    steps[i].end = seen[i] ? std::max(steps[i].end, end) : end;
    seen[i] = 1;
  }
  std::vector<PipelineStepTime> out;
  for (size_t i = 0; i < steps.size(); ++i)
    if (seen[i]) out.push_back(steps[i]);  // a stage without update ops has no update step
  return out;
}

}  // namespace devplace::exec
