// Isolated timing of the op parts of a partitioned strategy (ProfileParts, exec/profiler.h).
#include <algorithm>
#include <map>
#include <thread>
#include <tuple>

#include "core/quantile.h"
#include "exec/backend.h"
#include "exec/part_plan.h"
#include "exec/pipeline.h"
#include "exec/profiler.h"
#include "exec/task_program.h"
#include "exec/tensor_util.h"
#include "exec/torch_errors.h"

namespace devplace {

namespace {

// Times unit `unit`'s kernel alone into `p`. Runs on the calling thread.
void TimeUnit(const exec::PartPlan& plan, int32_t unit, const ProfileOptions& options, OpTiming* p) {
  const exec::Unit& u = plan.units[unit];
  const std::vector<at::Tensor> in = plan.SyntheticInputs(unit, options.seed);
  std::vector<double> times;
  for (int32_t run = 0; run < options.warmup_runs + options.timed_runs; ++run) {
    std::vector<at::Tensor> out(u.out_slots.size());
    const double t0 = exec::NowSeconds();
    u.kernel->Run(in, out);
    exec::SyncDevice(u.torch_device);
    if (run >= options.warmup_runs) times.push_back(exec::NowSeconds() - t0);
  }
  p->seconds = std::max(Median(times), 1e-9);
  p->min_seconds = *std::min_element(times.begin(), times.end());
  p->max_seconds = *std::max_element(times.begin(), times.end());
}

// The units of `plan` that are parts of split ops, grouped by signature: entries (without times) and, per entry, its
// units.
std::vector<OpTiming> PartSignatures(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                     const exec::PartPlan& plan, std::vector<std::vector<int32_t>>* units) {
  std::vector<OpTiming> entries;
  std::map<std::tuple<std::string, std::string, int, std::vector<int64_t>, double>, size_t> index;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    const exec::Unit& u = plan.units[i];
    const Op& o = graph.op(u.op);
    const int32_t parts = strategy.configs[u.op].num_parts();
    if (parts < 2) continue;
    const int32_t distinct = Layout(o, strategy.configs[u.op]).distinct;
    OpTiming t;
    t.device_kind = topology.device(u.device).kind;
    t.op_type = o.type;
    t.role = o.role;
    t.dtype = o.dtype;
    for (int32_t a = 0; a < u.out_box.rank; ++a) t.shape.push_back(u.out_box.hi[a] - u.out_box.lo[a]);
    t.flops = o.flops / distinct;  // as the simulator prices a part
    const auto key = std::make_tuple(t.device_kind, t.op_type, static_cast<int>(t.role), t.shape, t.flops);
    auto [it, added] = index.emplace(key, entries.size());
    if (added) {
      t.example_op = o.name;
      entries.push_back(std::move(t));
      units->emplace_back();
    }
    OpTiming& e = entries[it->second];
    ++e.instances;
    e.stand_in = e.stand_in || u.stand_in;
    (*units)[it->second].push_back(static_cast<int32_t>(i));
  }
  return entries;
}

// In-graph: whole steps of the strategy, every part on its own device's worker as in the step it prices (so a part
// pays what the step makes it pay: the other workers' kernels running at the same time on the shared caches and
// memory, its worker's allocator, fresh outputs); a part's time is its median compute time over the timed steps
// (assembling its inputs from local tensors, then its kernel), a signature's the mean over its parts.
Status TimeInGraph(const exec::PartPlan& plan, const std::vector<at::Device>& device_of, const std::vector<int>& cores,
                   const ProfileOptions& options, const std::vector<std::vector<int32_t>>& units,
                   std::vector<OpTiming>* entries) {
  const exec::TaskProgram& program = plan.program;
  exec::TaskRuntime runtime(program, device_of, cores);
  std::vector<at::Tensor> slots;
  exec::TaskTimes times;
  const exec::UnitRunner run = [&](int32_t unit, std::vector<at::Tensor>& s) { plan.RunUnit(unit, s); };
  std::vector<int32_t> task_of_unit(plan.units.size(), -1);
  for (size_t t = 0; t < program.tasks.size(); ++t)
    if (program.tasks[t].kind == exec::TaskKind::kCompute) task_of_unit[program.tasks[t].unit] = static_cast<int32_t>(t);
  std::vector<std::vector<double>> samples(plan.units.size());
  for (int32_t step = 0; step < options.warmup_runs + options.timed_runs; ++step) {
    const std::string error = runtime.Step(run, &slots, &times);
    if (!error.empty()) return Error{error};
    if (step < options.warmup_runs) continue;
    for (size_t u = 0; u < plan.units.size(); ++u)
      samples[u].push_back(times.end[task_of_unit[u]] - times.start[task_of_unit[u]]);
  }
  for (size_t e = 0; e < entries->size(); ++e) {
    OpTiming& p = (*entries)[e];
    p.min_seconds = 1e300;
    for (int32_t u : units[e]) {
      const double seconds = Median(samples[u]);
      p.seconds += seconds / static_cast<double>(units[e].size());
      p.min_seconds = std::min(p.min_seconds, seconds);
      p.max_seconds = std::max(p.max_seconds, seconds);
    }
    p.seconds = std::max(p.seconds, 1e-9);
  }
  return Status::Ok();
}

// ProfileParts of a strategy already checked (a valid one, or a pipeline's MicrobatchStrategy).
Expected<std::vector<OpTiming>> ProfileCheckedParts(const Graph& graph, const Topology& topology,
                                                    const Strategy& strategy, const ProfileOptions& options) {
  Expected<BackendInfo> backend = ResolveBackend(options.backend, topology);
  if (!backend.ok()) return backend.error();
  exec::ConfigureTorch();
  const bool in_graph = options.mode == ProfileMode::kInGraph;
  std::vector<at::Device> device_of;
  std::vector<int> cores;  // in-graph: every device's worker core, as the executor pins them
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    device_of.push_back(exec::TorchDevice(*backend, d));
    cores.push_back(exec::WorkerCore(*backend, d, options.pin_threads));
  }
  std::vector<OpTiming> entries;
  Status status;
  auto profile = [&] {
    Expected<exec::PartPlan> plan = exec::BuildPartPlan(graph, topology, strategy, device_of, options.seed);
    if (!plan.ok()) {
      status = plan.error();
      return;
    }
    std::vector<std::vector<int32_t>> units;
    entries = PartSignatures(graph, topology, strategy, *plan, &units);
    if (in_graph) {
      status = TimeInGraph(*plan, device_of, cores, options, units, &entries);
      return;
    }
    for (size_t e = 0; e < entries.size(); ++e) TimeUnit(*plan, units[e][0], options, &entries[e]);
  };
  std::thread worker([&] {  // isolated: set up like a worker of the first device, as the plain profiler does
    if (!in_graph) exec::SetUpWorkerThread(device_of[0], cores[0]);
    try {
      profile();
    } catch (const std::exception& e) {  // c10::Error or std::bad_alloc
      status = Error{"graph '" + graph.name() + "': profiling its parts failed: " +
                     exec::DescribeTorchFailure(e, backend->name)};
    }
  });
  worker.join();
  if (!status.ok()) return status.error();
  return entries;
}

}  // namespace

Expected<std::vector<OpTiming>> ProfileParts(const Graph& graph, const Topology& topology, const Strategy& strategy,
                                             const ProfileOptions& options) {
  if (Status s = ValidateProfileOptions(options); !s.ok()) return s.error();
  if (Status s = ValidateStrategy(strategy, graph, topology); !s.ok()) return s.error();
  return ProfileCheckedParts(graph, topology, strategy, options);
}

Expected<std::vector<OpTiming>> ProfilePipelineParts(const Graph& graph, const Topology& topology,
                                                     const PipelinePlan& plan, const ProfileOptions& options) {
  if (Status s = ValidateProfileOptions(options); !s.ok()) return s.error();
  Expected<Strategy> strategy = MicrobatchStrategy(graph, topology, plan);
  if (!strategy.ok()) return strategy.error();
  return ProfileCheckedParts(graph, topology, *strategy, options);
}

}  // namespace devplace
