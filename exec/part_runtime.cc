// Partitioned execution: an Executor over a PartPlan's task program, and the timing of its steps.
#include "exec/part_runtime.h"

#include <algorithm>
#include <set>

#include "core/quantile.h"
#include "distributed/process_group.h"
#include "exec/backend.h"
#include "exec/torch_errors.h"
#include "exec/tensor_util.h"
#include "exec/worker_steps.h"

namespace devplace {

namespace {

// Each collective's step-by-step first start (the earliest over the ranks), last end (the latest) and busy time
// (the sum).
Status MergeCollectiveTimes(ProcessGroup& group, std::vector<std::vector<double>>* first,
                            std::vector<std::vector<double>>* last, std::vector<std::vector<double>>* busy) {
  const std::pair<std::vector<std::vector<double>>*, ProcessGroup::Reduce> parts[] = {
      {first, ProcessGroup::Reduce::kMin}, {last, ProcessGroup::Reduce::kMax}, {busy, ProcessGroup::Reduce::kSum}};
  for (const auto& [table, op] : parts) {
    std::vector<double> flat;
    for (const auto& row : *table) flat.insert(flat.end(), row.begin(), row.end());
    if (flat.empty()) return Status::Ok();
    at::Tensor t = at::tensor(flat, at::kDouble);
    if (Status s = group.AllReduce(t, op, "merging the collectives' times"); !s) return s;
    const double* p = t.data_ptr<double>();
    for (auto& row : *table)
      for (double& x : row) x = *p++;
  }
  return Status::Ok();
}

}  // namespace

Expected<Executor> Executor::CreatePartitioned(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                               const ExecOptions& options, const BackendInfo& backend,
                                               ProcessGroup* group, const std::vector<int32_t>& rank_of_device,
                                               const PipelinePlan* pipeline) {
  if (group != nullptr) {
    if (rank_of_device.size() != static_cast<size_t>(topology.num_devices()))
      return Error{"the rank map has " + std::to_string(rank_of_device.size()) + " entries; topology '" +
                   topology.name() + "' has " + std::to_string(topology.num_devices()) + " devices"};
    for (DeviceId d = 0; d < topology.num_devices(); ++d)
      if (rank_of_device[d] < 0 || rank_of_device[d] >= group->size())
        return Error{"device '" + topology.device(d).name + "' maps to rank " + std::to_string(rank_of_device[d]) +
                     ", not a rank of the " + std::to_string(group->size()) + "-process group"};
  }
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
      return exec::BuildPartPlan(graph, topology, m->strategy, device_of, options.seed, pipeline == nullptr);
    } catch (const std::exception& e) {  // c10::Error or std::bad_alloc
      return Error{"graph '" + graph.name() + "': cannot allocate the step's tensors: " +
                   exec::DescribeTorchFailure(e, backend.name)};
    }
  }();
  if (!plan.ok()) return plan.error();
  m->plan = std::move(*plan);
  if (pipeline != nullptr) {
    Expected<exec::PipelineLabels> labels = exec::SchedulePipeline(graph, *pipeline, &m->plan);
    if (!labels) return labels.error();
    m->pipeline = std::move(*labels);
  }
  if (group == nullptr) {
    m->runtime = std::make_unique<exec::TaskRuntime>(m->plan.program, device_of, core);
    return Executor(std::move(m));
  }
  Expected<exec::RankProgram> rank =
      exec::BuildRankProgram(graph, m->plan, rank_of_device, group->rank(), group->size(), device_of);
  if (!rank) return rank.error();
  m->group = group;
  m->rank = std::make_unique<exec::RankProgram>(std::move(*rank));
  m->runtime = std::make_unique<exec::TaskRuntime>(m->rank->program, device_of, core);
  Partitioned* p = m.get();
  m->transport = std::make_unique<exec::ProcessTransport>(*group, m->rank->messages, [p](const std::string& message) {
    p->runtime->Abort(message);
  });
  // Subgroups for collectives among some ranks, made by every member in one (sorted) order: no rendezvous waits
  // for a rank that waits in another first.
  std::vector<ProcessGroup*> groups;
  for (const exec::ProcessCollective& c : m->rank->collectives)
    if (static_cast<int32_t>(c.ranks.size()) < group->size()) m->subgroups[c.ranks] = nullptr;
  for (auto& [ranks, sub] : m->subgroups) {
    Expected<std::unique_ptr<ProcessGroup>> made = group->SubGroup(ranks);
    if (!made) return made.error();
    sub = std::move(*made);
  }
  for (const exec::ProcessCollective& c : m->rank->collectives)
    groups.push_back(static_cast<int32_t>(c.ranks.size()) < group->size() ? m->subgroups[c.ranks].get() : group);
  m->sequencer = std::make_unique<exec::CollectiveSequencer>(m->rank->program, m->rank->collectives, groups);
  m->runtime->SetHooks({[p](const exec::Task& send, at::Tensor data) {
                          if (Status s = p->transport->Send(send.message, data); !s) {
                            p->runtime->Abort(s.error().message);
                            p->transport->Abort();
                            p->sequencer->Abort();
                          }
                        },
                        [p] { p->transport->Progress(); },
                        [p](int32_t task, std::vector<at::Tensor>& slots) { p->sequencer->Ready(task, slots); }});
  return Executor(std::move(m));
}

std::string Executor::Partitioned::Step(int32_t step, std::vector<at::Tensor>* slots, exec::TaskTimes* times) {
  const exec::UnitRunner run = [this](int32_t unit, std::vector<at::Tensor>& s) { plan.RunUnit(unit, s); };
  if (!transport) return runtime->Step(run, slots, times);
  std::string error = runtime->Step(run, slots, times, [&] {
    const Status begun = transport->BeginStep(step, [this](int32_t message, at::Tensor t) {
      runtime->Deliver(rank->arrival_of[message], std::move(t));
    });
    if (!begun) {
      runtime->Abort(begun.error().message);
    } else {  // after the barrier: the group's collectives of the step follow it on every rank
      sequencer->BeginStep([this](int32_t task, double start) { runtime->Complete(task, start); },
                           [this](const std::string& message) {
                             runtime->Abort(message);
                             transport->Abort();
                           });
    }
    step_start = exec::NowSeconds();
  });
  if (!error.empty()) {  // receives still waiting end at once; no further collective starts
    transport->Abort();
    sequencer->Abort();
  }
  sequencer->EndStep();
  const Status ended = transport->EndStep();
  if (error.empty() && !ended) error = ended.error().message;
  return error;
}

Expected<ExecResult> Executor::RunPartitioned() {
  Partitioned& m = *parts_;
  const Graph& g = m.graph;
  const exec::TaskProgram& program = m.program();
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
  std::vector<std::vector<double>> busy(devices), copy(devices), op_times(n), coll_first(collectives),
      coll_last(collectives), coll_busy(collectives);
  std::vector<at::Tensor> slots;
  std::vector<std::vector<float>> values;
  exec::TaskTimes times;
  const bool record = m.options.record_values || m.options.record_checksums;
  const int32_t total = m.options.warmup_steps + m.options.timed_steps;
  for (int32_t step = 0; step < total; ++step) {
    const std::string error = m.Step(step, &slots, &times);
    if (!error.empty()) return Error{error};
    if (step == total - 1 && record && !m.group)
      for (OpId op = 0; op < n; ++op) values.push_back(m.plan.Value(g, m.strategy, op, slots));
    if (m.group) {
      if (Status s = exec::CommitUpdatesAcrossRanks(m.plan, *m.group); !s) return s.error();
      if (step == total - 1 && record) {
        auto merged = exec::RankValues(g, m.strategy, m.plan, m.rank->local_unit, slots, *m.group);
        if (!merged) return merged.error();
        values = std::move(*merged);
      }
    } else {
      m.plan.CommitUpdates();
    }
    if (step < m.options.warmup_steps) continue;
    // One process: the first task's start to the last task's end; a rank: from its step's start (the barrier).
    double first = m.group ? m.step_start : (times.start.empty() ? 0.0 : times.start[0]), last = first;
    std::vector<double> dev_busy(devices, 0.0), dev_copy(devices, 0.0), op_time(n, 0.0);
    std::vector<double> c_first(collectives, 1e300), c_last(collectives, -1e300), c_busy(collectives, 0.0);
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
      // an arrival only waits; a process-group collective runs off the workers (its time is the collective's)
      if (task.kind != exec::TaskKind::kArrive && task.kind != exec::TaskKind::kCollective) dev_copy[task.device] += d;
      if (task.collective < 0) {
        if (task.kind == exec::TaskKind::kCopy || task.kind == exec::TaskKind::kArrive) {  // copies end on their device
          bytes += task.bytes;
          ++copies;
        }
        continue;
      }
      c_first[task.collective] = std::min(c_first[task.collective], times.start[t]);
      c_last[task.collective] = std::max(c_last[task.collective], times.end[t]);
      if (task.kind != exec::TaskKind::kArrive) c_busy[task.collective] += d;
    }
    result.step_seconds.push_back(last - first);
    if (step == total - 1 && !m.group) result.pipeline_steps = exec::PipelineStepTimes(m.pipeline, times, first);
    result.bytes_copied = bytes;
    result.num_copies = copies;
    for (DeviceId d = 0; d < devices; ++d) {
      busy[d].push_back(dev_busy[d]);
      copy[d].push_back(dev_copy[d]);
    }
    for (OpId op = 0; op < n; ++op) op_times[op].push_back(op_time[op]);
    for (size_t c = 0; c < collectives; ++c) {
      coll_first[c].push_back(c_first[c]);
      coll_last[c].push_back(c_last[c]);
      coll_busy[c].push_back(c_busy[c]);
    }
  }
  if (m.group)
    if (Status s = MergeCollectiveTimes(*m.group, &coll_first, &coll_last, &coll_busy); !s) return s.error();
  for (DeviceId d = 0; d < devices; ++d) {
    result.device_busy_seconds.push_back(Median(busy[d]));
    result.device_copy_seconds.push_back(Median(copy[d]));
  }
  for (OpId op = 0; op < n; ++op) result.op_seconds.push_back(Median(op_times[op]));
  result.op_handoff_seconds.assign(n, 0.0);
  for (size_t c = 0; c < collectives; ++c) {
    std::vector<double> span;
    for (size_t k = 0; k < coll_first[c].size(); ++k) span.push_back(std::max(0.0, coll_last[c][k] - coll_first[c][k]));
    const exec::CollectiveInfo& info = program.collectives[c];
    result.collectives.push_back(
        {info.kind, info.label, info.devices, info.bytes, Median(span), Median(coll_busy[c])});
  }
  if (m.group) {
    if (Status s = exec::MergeRanks(*m.group, &result); !s) return s.error();  // before the (merged) checksums
  } else {
    exec::SummariseSteps(&result);
  }
  for (std::vector<float>& v : values) {
    double sum = 0.0;
    for (float x : v) sum += x;
    if (m.options.record_checksums) result.op_checksums.push_back(sum);
    if (m.options.record_values) result.op_values.push_back(std::move(v));
  }
  return result;
}

}  // namespace devplace
