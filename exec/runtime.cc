// The executor's runtime: one worker thread per device, each running its ops as soon as their inputs arrive,
// copying tensors from other devices into its own memory, and timing every op and step.
#include <algorithm>
#include <atomic>
#include <set>
#include <thread>
#include <unordered_map>

#include "core/quantile.h"
#include "distributed/process_group.h"
#include "exec/backend.h"
#include "exec/executor.h"
#include "exec/kernels.h"
#include "exec/part_runtime.h"
#include "exec/process_transport.h"
#include "exec/ready_queue.h"
#include "exec/tensor_util.h"
#include "exec/torch_errors.h"
#include "exec/worker_steps.h"

namespace devplace {

namespace {

std::string ShapeText(at::IntArrayRef shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

Status exec::MergeRanks(ProcessGroup& group, ExecResult* result) {
  std::vector<double> sums;
  for (const auto* v : {&result->op_seconds, &result->op_handoff_seconds, &result->op_checksums,
                        &result->device_busy_seconds, &result->device_copy_seconds})
    sums.insert(sums.end(), v->begin(), v->end());
  sums.push_back(static_cast<double>(result->bytes_copied));
  sums.push_back(result->num_copies);
  at::Tensor sum = at::tensor(sums, at::kDouble);
  at::Tensor steps = at::tensor(result->step_seconds, at::kDouble);
  if (Status s = group.AllReduce(sum, ProcessGroup::Reduce::kSum, "merging the ranks' results"); !s) return s;
  if (Status s = group.AllReduce(steps, ProcessGroup::Reduce::kMax, "merging the ranks' step times"); !s) return s;
  const double* p = sum.data_ptr<double>();
  for (auto* v : {&result->op_seconds, &result->op_handoff_seconds, &result->op_checksums,
                  &result->device_busy_seconds, &result->device_copy_seconds})
    for (double& x : *v) x = *p++;
  result->bytes_copied = static_cast<int64_t>(*p++);
  result->num_copies = static_cast<int32_t>(*p++);
  for (size_t i = 0; i < result->step_seconds.size(); ++i) result->step_seconds[i] = steps[i].item<double>();
  exec::SummariseSteps(result);
  return Status::Ok();
}

struct Executor::Impl {
  struct Worker {
    DeviceId device = 0;
    at::Device torch_device{at::kCPU};
    int core = -1;
    int32_t num_ops = 0;
    exec::ReadyQueue queue;
    std::thread thread;
    // This step's totals.
    double busy = 0.0, copy = 0.0;
    int64_t bytes = 0;
    int32_t copies = 0;
    // Tensors received from other devices in this step, by producer (the producer-side data each was copied from,
    // and the copy), and the producer's edges to this device not yet consumed (reset from edges_in every step).
    struct Copy {
      const void* from;
      at::Tensor local;
    };
    std::unordered_map<OpId, std::vector<Copy>> received;
    std::unordered_map<OpId, int32_t> edges_left, edges_in;
  };

  const Graph& graph;
  const Topology& topology;
  ExecOptions options;
  BackendInfo backend;
  std::vector<DeviceId> device_of_op;
  exec::Plan plan;
  std::vector<std::unique_ptr<Worker>> workers;  // by DeviceId (null for devices without ops)
  std::vector<at::Tensor> slots;                 // by edge: the tensor waiting for its consumer
  std::unique_ptr<std::atomic<int32_t>[]> remaining;  // by op: in-edges not yet delivered
  std::vector<double> op_start, op_end, op_kernel, op_handoff, checksums;
  std::vector<std::vector<float>> values;
  bool check_shapes = false;
  bool record_values = false;  // this step keeps every op's value (ExecResult::op_values)

  exec::StepGate gate;
  // A rank of a multi-process execution: the cross-process edges (null in one process), and when this rank's
  // step started (after the barrier).
  std::unique_ptr<exec::ProcessTransport> transport;
  double step_start = 0.0;

  Impl(const Graph& g, const Topology& t) : graph(g), topology(t) {}

  ~Impl() {
    transport.reset();  // its receiving threads deliver into this object
    gate.Close();
    for (auto& w : workers)
      if (w && w->thread.joinable()) w->thread.join();
  }

  bool IsLocal(OpId op) const { return !transport || transport->IsLocal(op); }

  // Records the step's first failure, aborts the step and (in a rank) the transport.
  void Fail(const std::string& message) {
    gate.Fail(message);
    if (transport) transport->Abort();
  }

  // Hands edge `e`'s tensor to its consumer, queueing the consumer when it was the last input missing.
  void Deliver(int32_t e, at::Tensor t) {
    const OpId dst = graph.edge(e).dst;
    slots[e] = std::move(t);
    if (remaining[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) workers[device_of_op[dst]]->queue.Push(dst);
  }

  void WorkerMain(Worker* w) {
    exec::SetUpWorkerThread(w->torch_device, w->core);
    gate.Serve([&] {
      try {  // copies and checksums allocate too
        RunStep(w);
      } catch (const std::exception& e) {
        Fail(exec::DescribeTorchFailure(e, topology.device(w->device).name));
      }
    });
  }

  std::string Describe(OpId op) const {
    return "op '" + graph.op(op).name + "' (" + graph.op(op).type + ")";
  }

  // The value ExecResult::op_values reports for `op` from what its kernel produced.
  std::vector<float> Value(OpId op, const exec::KernelIo& io) const {
    const Op& o = graph.op(op);
    at::Tensor t;
    if (o.role != OpRole::kBackward && !io.produced.empty()) {
      t = io.produced[0];
    } else if (o.role == OpRole::kBackward && !io.produced.empty()) {
      const OpId f = graph.forward_op_of(op);
      if (f >= 0 && graph.op(f).role == OpRole::kForward && plan.owner[f] == f) t = io.produced.back();
    }
    if (!t.defined()) return {};
    t = t.to(at::kCPU).to(at::kFloat).contiguous();
    return std::vector<float>(t.data_ptr<float>(), t.data_ptr<float>() + t.numel());
  }

  // Checks what a kernel produced against the graph (the first step only).
  bool CheckProduced(OpId op, const exec::KernelIo& io) {
    const auto& expected = plan.kernels[op]->expected_shapes();
    for (size_t i = 0; i < io.produced.size() && i < expected.size(); ++i) {
      if (!io.produced[i].defined() || io.produced[i].sizes().vec() == expected[i]) continue;
      Fail(Describe(op) + ": kernel produced " + ShapeText(io.produced[i].sizes()) + " where the graph needs " +
           ShapeText(expected[i]));
      return false;
    }
    return true;
  }

  // A tensor from op `src` on another device, in this worker's memory: the worker copies it the first time one of
  // its ops needs it and hands the same copy to the other ops here that consume the same tensor (one transfer per
  // tensor and destination device), until the last of src's edges to this device has taken it.
  at::Tensor Received(Worker* w, OpId src, const at::Tensor& t, double* copying) {
    std::vector<Worker::Copy>& copies = w->received[src];
    at::Tensor local;
    for (const Worker::Copy& c : copies)
      if (c.from == t.data_ptr() && c.local.sizes() == t.sizes()) local = c.local;
    if (!local.defined()) {
      const double c0 = exec::NowSeconds();
      local = exec::CopyTo(t, w->torch_device);
      exec::SyncDevice(w->torch_device);
      *copying += exec::NowSeconds() - c0;
      w->bytes += static_cast<int64_t>(local.nbytes());
      ++w->copies;
      copies.push_back({t.data_ptr(), local});
    }
    if (--w->edges_left[src] == 0) w->received.erase(src);
    return local;
  }

  void RunStep(Worker* w) {
    exec::KernelIo io;
    for (int32_t done = 0; done < w->num_ops; ++done) {
      const OpId op = w->queue.Pop(gate.abort());
      if (op < 0) return;
      const auto in = graph.in_edges(op);
      const auto out = graph.out_edges(op);
      io.inputs.resize(in.size());
      double copying = 0.0;
      for (size_t i = 0; i < in.size(); ++i) {
        at::Tensor t = std::move(slots[in[i]]);
        const OpId src = graph.edge(in[i]).src;
        if (device_of_op[src] != w->device && IsLocal(src)) t = Received(w, src, t, &copying);
        io.inputs[i] = std::move(t);
      }
      io.outputs.assign(out.size(), at::Tensor());
      io.produced.clear();
      const double t0 = exec::NowSeconds();
      try {
        plan.kernels[op]->Run(io);
        exec::SyncDevice(w->torch_device);
      } catch (const std::exception& e) {
        Fail(Describe(op) + ": kernel failed: " + exec::DescribeTorchFailure(e, topology.device(w->device).name));
        return;
      }
      const double t1 = exec::NowSeconds();
      if (check_shapes && !CheckProduced(op, io)) return;
      if (record_values) values[op] = Value(op, io);
      if (options.record_checksums) {
        double sum = 0.0;
        for (const at::Tensor& t : io.produced)
          if (t.defined()) sum += t.sum(at::kDouble).item<double>();
        checksums[op] = sum;
      }
      for (size_t j = 0; j < out.size(); ++j) {
        if (IsLocal(graph.edge(out[j]).dst)) {
          Deliver(out[j], std::move(io.outputs[j]));
        } else if (Status s = transport->Send(out[j], io.outputs[j]); !s) {
          Fail(s.error().message);
          return;
        }
      }
      if (transport) transport->Progress();
      io.inputs.clear();
      op_start[op] = t0;
      op_kernel[op] = t1 - t0;
      op_end[op] = exec::NowSeconds();
      op_handoff[op] = op_end[op] - t1;
      w->busy += t1 - t0;
      w->copy += copying;
    }
  }

  // One training step on all workers (of this rank). Returns false (with `error` set) when a kernel failed, or a
  // peer or the link to it did.
  bool Step(int32_t step) {
    gate.Reset();
    for (auto& w : workers) {
      if (!w) continue;
      w->queue.Clear();
      w->busy = w->copy = 0.0;
      w->bytes = 0;
      w->copies = 0;
      w->received.clear();
      w->edges_left = w->edges_in;
    }
    std::fill(slots.begin(), slots.end(), at::Tensor());
    for (OpId op = 0; op < graph.num_ops(); ++op)
      remaining[op].store(static_cast<int32_t>(graph.in_edges(op).size()), std::memory_order_relaxed);
    for (OpId op = 0; op < graph.num_ops(); ++op)
      if (graph.in_edges(op).empty() && IsLocal(op)) workers[device_of_op[op]]->queue.Push(op);
    if (transport) {
      if (Status s = transport->BeginStep(step, [this](int32_t e, at::Tensor t) { Deliver(e, std::move(t)); }); !s) {
        gate.Fail(s.error().message);
        return false;
      }
    }
    step_start = exec::NowSeconds();
    int32_t running = 0;
    for (auto& w : workers) running += w ? 1 : 0;
    gate.Run(running);
    if (transport)
      if (Status s = transport->EndStep(); !s) Fail(s.error().message);
    return gate.error().empty();
  }
};

Executor::Executor(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Executor::Executor(std::unique_ptr<Partitioned> parts) : parts_(std::move(parts)) {}
Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;
Executor::~Executor() = default;

namespace {

// The rank of every op, or an error when the map does not fit the group and the topology.
Expected<std::vector<int32_t>> RankOfOps(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                         const ProcessGroup& group, const std::vector<int32_t>& rank_of_device) {
  if (rank_of_device.size() != static_cast<size_t>(topology.num_devices()))
    return Error{"the rank map has " + std::to_string(rank_of_device.size()) + " entries; topology '" +
                 topology.name() + "' has " + std::to_string(topology.num_devices()) + " devices"};
  std::vector<int32_t> rank_of_op;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const int32_t r = rank_of_device[strategy.configs[op].devices[0]];
    if (r < 0 || r >= group.size())
      return Error{"device '" + topology.device(strategy.configs[op].devices[0]).name + "' maps to rank " +
                   std::to_string(r) + ", not a rank of the " + std::to_string(group.size()) + "-process group"};
    rank_of_op.push_back(r);
  }
  return rank_of_op;
}

}  // namespace

Expected<Executor> Executor::Create(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                    const ExecOptions& options) {
  return CreateIn(graph, topology, strategy, options, nullptr, {});
}

Expected<Executor> Executor::CreateRank(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                        const ExecOptions& options, ProcessGroup& group,
                                        const std::vector<int32_t>& rank_of_device) {
  return CreateIn(graph, topology, strategy, options, &group, rank_of_device);
}

Expected<Executor> Executor::CreateIn(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                      const ExecOptions& options, ProcessGroup* group,
                                      const std::vector<int32_t>& rank_of_device) {
  if (Status s = ValidateExecOptions(options); !s.ok()) return s.error();
  if (graph.num_ops() == 0) return Error{"graph '" + graph.name() + "' has no ops to execute"};
  if (Status s = ValidateStrategy(strategy, graph, topology); !s.ok()) return s.error();
  Expected<BackendInfo> backend = ResolveBackend(options.backend, topology);
  if (!backend.ok()) return backend.error();
  exec::ConfigureTorch();
  if (!strategy.is_plain_placement())
    return CreatePartitioned(graph, topology, strategy, options, *backend, group, rank_of_device);

  auto impl = std::make_unique<Impl>(graph, topology);
  impl->options = options;
  impl->backend = *backend;
  std::vector<at::Device> torch_device_of_op;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    impl->device_of_op.push_back(strategy.configs[op].devices[0]);
    torch_device_of_op.push_back(exec::TorchDevice(*backend, impl->device_of_op.back()));
  }
  Expected<exec::Plan> plan = [&]() -> Expected<exec::Plan> {
    try {
      return exec::BuildPlan(graph, torch_device_of_op, options.seed);
    } catch (const std::exception& e) {  // c10::Error or std::bad_alloc
      return Error{"graph '" + graph.name() + "': cannot allocate the step's tensors: " +
                   exec::DescribeTorchFailure(e, backend->name)};
    }
  }();
  if (!plan.ok()) return plan.error();
  impl->plan = std::move(*plan);
  if (group != nullptr) {
    Expected<std::vector<int32_t>> rank_of_op = RankOfOps(graph, topology, strategy, *group, rank_of_device);
    if (!rank_of_op) return rank_of_op.error();
    Impl* m = impl.get();
    impl->transport = std::make_unique<exec::ProcessTransport>(
        *group, graph, impl->plan, std::move(*rank_of_op), torch_device_of_op,
        [m](const std::string& message) { m->Fail(message); });
  }

  const int32_t n = graph.num_ops();
  impl->slots.resize(graph.num_edges());
  impl->remaining = std::make_unique<std::atomic<int32_t>[]>(n);
  impl->op_start.assign(n, 0.0);
  impl->op_end.assign(n, 0.0);
  impl->op_kernel.assign(n, 0.0);
  impl->op_handoff.assign(n, 0.0);
  impl->checksums.assign(n, 0.0);
  impl->values.assign(n, {});
  impl->workers.resize(topology.num_devices());
  for (OpId op = 0; op < n; ++op) {
    const DeviceId d = impl->device_of_op[op];
    if (!impl->IsLocal(op)) continue;
    if (!impl->workers[d]) {
      impl->workers[d] = std::make_unique<Impl::Worker>();
      impl->workers[d]->device = d;
      impl->workers[d]->torch_device = torch_device_of_op[op];
      impl->workers[d]->core = exec::WorkerCore(*backend, d, options.pin_threads);
    }
    ++impl->workers[d]->num_ops;
  }
  for (const Edge& e : graph.edges()) {
    const DeviceId d = impl->device_of_op[e.dst];
    if (impl->device_of_op[e.src] != d && impl->IsLocal(e.src) && impl->IsLocal(e.dst))
      ++impl->workers[d]->edges_in[e.src];
  }
  for (auto& w : impl->workers)
    if (w) impl->gate.Watch(&w->queue);
  for (auto& w : impl->workers)
    if (w) w->thread = std::thread(&Impl::WorkerMain, impl.get(), w.get());
  return Executor(std::move(impl));
}

Expected<ExecResult> Executor::Run() {
  if (parts_) return RunPartitioned();
  Impl& m = *impl_;
  const int32_t n = m.graph.num_ops();
  const int32_t devices = m.topology.num_devices();
  ExecResult result;
  result.backend = m.backend;
  result.device_ops.assign(devices, 0);
  std::set<std::string> stand_in_types;
  for (OpId op = 0; op < n; ++op) {
    ++result.device_ops[m.device_of_op[op]];
    result.op_stand_in.push_back(m.plan.kernels[op]->stand_in() ? 1 : 0);
    if (m.plan.kernels[op]->stand_in()) {
      ++result.stand_in_ops;
      stand_in_types.insert(m.graph.op(op).type);
    }
  }
  result.stand_in_types.assign(stand_in_types.begin(), stand_in_types.end());

  std::vector<std::vector<double>> busy(devices), copy(devices), op_times(n), op_handoffs(n);
  const int32_t total = m.options.warmup_steps + m.options.timed_steps;
  for (int32_t step = 0; step < total; ++step) {
    m.check_shapes = step == 0;
    m.record_values = m.options.record_values && step == total - 1;
    if (!m.Step(step)) return Error{m.gate.TakeError()};
    m.plan.CommitUpdates();
    if (step < m.options.warmup_steps) continue;
    // One process: the first op's start to the last op's end. A rank: its step's start (the barrier) to its
    // last op's end (MergeRanks keeps the longest over the ranks).
    double first = m.transport ? m.step_start : 1e300, last = m.step_start;
    for (OpId op = 0; op < n; ++op) {
      if (!m.IsLocal(op)) continue;
      first = std::min(first, m.op_start[op]);
      last = std::max(last, m.op_end[op]);
      op_times[op].push_back(m.op_kernel[op]);
      op_handoffs[op].push_back(m.op_handoff[op]);
    }
    result.step_seconds.push_back(last - first);
    for (DeviceId d = 0; d < devices; ++d) {
      const Impl::Worker* w = m.workers[d].get();
      busy[d].push_back(w ? w->busy : 0.0);
      copy[d].push_back(w ? w->copy : 0.0);
    }
    result.bytes_copied = 0;
    result.num_copies = 0;
    for (const auto& w : m.workers) {
      if (!w) continue;
      result.bytes_copied += w->bytes;
      result.num_copies += w->copies;
    }
    if (m.transport) {
      result.bytes_copied += m.transport->received_bytes();
      result.num_copies += m.transport->received();
    }
  }
  exec::SummariseSteps(&result);
  for (DeviceId d = 0; d < devices; ++d) {
    result.device_busy_seconds.push_back(Median(busy[d]));
    result.device_copy_seconds.push_back(Median(copy[d]));
  }
  for (OpId op = 0; op < n; ++op) {
    result.op_seconds.push_back(Median(op_times[op]));
    result.op_handoff_seconds.push_back(Median(op_handoffs[op]));
  }
  if (m.options.record_checksums) result.op_checksums = m.checksums;
  if (m.options.record_values) result.op_values = std::move(m.values);
  if (m.transport)
    if (Status s = exec::MergeRanks(m.transport->group(), &result); !s) return s.error();
  return result;
}

Expected<ExecResult> ExecuteStrategy(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                     const ExecOptions& options) {
  Expected<Executor> executor = Executor::Create(graph, topology, strategy, options);
  if (!executor.ok()) return executor.error();
  return executor->Run();
}

}  // namespace devplace
