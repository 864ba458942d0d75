// Partitioned execution: an Executor over a PartPlan's task program, and the timing of its steps.
#include "exec/part_runtime.h"

#include <algorithm>
#include <set>

#include "exec/backend.h"
#include "exec/torch_errors.h"
#include "exec/tensor_util.h"
#include "exec/worker_steps.h"

namespace devplace {

Expected<Executor> Executor::CreatePartitioned(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                               const ExecOptions& options, const BackendInfo& backend) {
  auto m = std::make_unique<Partitioned>(graph, topology, strategy);
  m->options = options;
  m->backend = backend;
  std::vector<at::Device> device_of;
  std::vector<int> core;
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    device_of.push_back(exec::TorchDevice(backend, d));
    core.push_back(exec::WorkerCore(backend, d, options.pin_threads));
  }
  Expected<exec::PartPlan> plan = [&]() -> Expected<exec::PartPlan> {
    try {
      return exec::BuildPartPlan(graph, topology, m->strategy, device_of, options.seed);
    } catch (const std::exception& e) {  // c10::Error or std::bad_alloc
      return Error{"graph '" + graph.name() + "': cannot allocate the step's tensors: " +
                   exec::DescribeTorchFailure(e, backend.name)};
    }
  }();
  if (!plan.ok()) return plan.error();
  m->plan = std::move(*plan);
  m->runtime = std::make_unique<exec::TaskRuntime>(m->plan.program, device_of, core);
  return Executor(std::move(m));
}

Expected<ExecResult> Executor::RunPartitioned() {
  Partitioned& m = *parts_;
  const Graph& g = m.graph;
  const exec::TaskProgram& program = m.plan.program;
  const int32_t n = g.num_ops();
  const int32_t devices = m.topology.num_devices();
  ExecResult result;
  result.backend = m.backend;
  result.device_ops.assign(devices, 0);
  result.op_stand_in.assign(n, 0);
  std::set<std::string> stand_in_types;
  for (const exec::Unit& u : m.plan.units) {
    ++result.device_ops[u.device];
    if (u.stand_in) result.op_stand_in[u.op] = 1;
  }
  for (OpId op = 0; op < n; ++op)
    if (result.op_stand_in[op]) {
      ++result.stand_in_ops;
      stand_in_types.insert(g.op(op).type);
    }
  result.stand_in_types.assign(stand_in_types.begin(), stand_in_types.end());

  const size_t collectives = program.collectives.size();
  std::vector<std::vector<double>> busy(devices), copy(devices), op_times(n), coll_times(collectives),
      coll_busy(collectives);
  std::vector<at::Tensor> slots;
  exec::TaskTimes times;
  const exec::UnitRunner run = [&](int32_t unit, std::vector<at::Tensor>& s) { m.plan.RunUnit(unit, s); };
  const int32_t total = m.options.warmup_steps + m.options.timed_steps;
  for (int32_t step = 0; step < total; ++step) {
    const std::string error = m.runtime->Step(run, &slots, &times);
    if (!error.empty()) return Error{error};
    if (step == total - 1 && (m.options.record_values || m.options.record_checksums)) {
      for (OpId op = 0; op < n; ++op) {
        std::vector<float> v = m.plan.Value(g, m.strategy, op, slots);
        double sum = 0.0;
        for (float x : v) sum += x;
        if (m.options.record_checksums) result.op_checksums.push_back(sum);
        if (m.options.record_values) result.op_values.push_back(std::move(v));
      }
    }
    m.plan.CommitUpdates();
    if (step < m.options.warmup_steps) continue;
    double first = times.start.empty() ? 0.0 : times.start[0], last = first;
    std::vector<double> dev_busy(devices, 0.0), dev_copy(devices, 0.0), op_time(n, 0.0);
    std::vector<double> c_first(collectives, 1e300), c_last(collectives, 0.0), c_busy(collectives, 0.0);
    int64_t bytes = 0;
    int32_t copies = 0;
    for (size_t t = 0; t < program.tasks.size(); ++t) {
      const exec::Task& task = program.tasks[t];
      const double d = times.end[t] - times.start[t];
      first = std::min(first, times.start[t]);
      last = std::max(last, times.end[t]);
      if (task.kind == exec::TaskKind::kCompute) {
        dev_busy[task.device] += d;
        op_time[m.plan.units[task.unit].op] += d;
        continue;
      }
      dev_copy[task.device] += d;
      if (task.kind == exec::TaskKind::kCopy) {
        bytes += task.bytes;
        ++copies;
      } else {
        c_first[task.collective] = std::min(c_first[task.collective], times.start[t]);
        c_last[task.collective] = std::max(c_last[task.collective], times.end[t]);
        c_busy[task.collective] += d;
      }
    }
    result.step_seconds.push_back(last - first);
    result.bytes_copied = bytes;
    result.num_copies = copies;
    for (DeviceId d = 0; d < devices; ++d) {
      busy[d].push_back(dev_busy[d]);
      copy[d].push_back(dev_copy[d]);
    }
    for (OpId op = 0; op < n; ++op) op_times[op].push_back(op_time[op]);
    for (size_t c = 0; c < collectives; ++c) {
      coll_times[c].push_back(c_last[c] - c_first[c]);
      coll_busy[c].push_back(c_busy[c]);
    }
  }
  exec::SummariseSteps(&result);
  for (DeviceId d = 0; d < devices; ++d) {
    result.device_busy_seconds.push_back(exec::Median(busy[d]));
    result.device_copy_seconds.push_back(exec::Median(copy[d]));
  }
  for (OpId op = 0; op < n; ++op) result.op_seconds.push_back(exec::Median(op_times[op]));
  result.op_handoff_seconds.assign(n, 0.0);
  for (size_t c = 0; c < collectives; ++c) {
    const exec::CollectiveInfo& info = program.collectives[c];
    result.collectives.push_back(
        {info.kind, info.label, info.devices, info.bytes, exec::Median(coll_times[c]), exec::Median(coll_busy[c])});
  }
  return result;
}

}  // namespace devplace
