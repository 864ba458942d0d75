#include "sim/simulator.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "sim/full_run.h"
#include "sim/objective.h"
#include "sim/memory.h"
#include "sim/partition.h"
#include "sim/plain_sim.h"

namespace devplace {
namespace sim {

Status CheckConfig(const Graph& graph, const Topology& topology, OpId op, const OpConfig& c) {
  const Op& o = graph.op(op);
  auto err = [&](const std::string& what) { return Error{"op '" + o.name + "': " + what}; };
  if (c.devices.empty()) return err("no device assigned");
  for (size_t k = 0; k < c.devices.size(); ++k) {
    if (c.devices[k] < 0 || c.devices[k] >= topology.num_devices())
      return err("device " + std::to_string(c.devices[k]) + " is not in topology '" + topology.name() + "' (" +
                 std::to_string(topology.num_devices()) + " devices)");
    for (size_t j = 0; j < k; ++j)
      if (c.devices[j] == c.devices[k])
        return err("device '" + topology.device(c.devices[k]).name + "' is listed twice");
  }
  if (c.degrees.empty()) return Status::Ok();  // one part, on every device (copies)
  if (c.degrees.size() != o.dims.size())
    return err("has " + std::to_string(c.degrees.size()) + " partition degrees but " +
               std::to_string(o.dims.size()) + " partitionable dimensions");
  int64_t parts = 1;
  for (size_t k = 0; k < c.degrees.size(); ++k) {
    if (c.degrees[k] < 1 || c.degrees[k] > o.dims[k].size)
      return err("degree " + std::to_string(c.degrees[k]) + " for dimension " + std::to_string(k) +
                 " must be in [1, " + std::to_string(o.dims[k].size) + "]");
    parts *= c.degrees[k];
  }
  if (c.num_parts() % parts != 0)
    return err("partition degrees multiply to " + std::to_string(parts) + " parts but " +
               std::to_string(c.num_parts()) + " devices are given (not a whole number of copies)");
  return Status::Ok();
}

Status CheckStrategy(const Graph& graph, const Topology& topology, const Strategy& strategy,
                     std::vector<DeviceId>* plain) {
  if (static_cast<int32_t>(strategy.configs.size()) != graph.num_ops())
    return Error{"strategy has " + std::to_string(strategy.configs.size()) + " op configs but graph '" +
                 graph.name() + "' has " + std::to_string(graph.num_ops()) + " ops"};
  if (plain) plain->resize(static_cast<size_t>(graph.num_ops()));
  bool all_plain = true;
  const DeviceId devices = topology.num_devices();
  // How many configs ahead the device lists (each in its own allocation) start loading.
  constexpr OpId kAhead = 16;
  for (OpId i = 0; i < graph.num_ops(); ++i) {
    if (i + kAhead < graph.num_ops()) __builtin_prefetch(strategy.configs[i + kAhead].devices.data());
    const OpConfig& c = strategy.configs[i];
    if (c.devices.size() == 1 && c.degrees.empty() && c.devices[0] >= 0 && c.devices[0] < devices) {
      if (plain) (*plain)[i] = c.devices[0];
      continue;
    }
    Status s = CheckConfig(graph, topology, i, c);
    if (!s) return s;
    all_plain = all_plain && c.num_parts() == 1;
    if (plain) (*plain)[i] = c.devices[0];
  }
  if (plain && !all_plain) plain->clear();
  return Status::Ok();
}

Status CheckGraph(const Graph& graph) {
  if (graph.num_ops() == 0) return Error{"graph '" + graph.name() + "' has no ops: nothing to simulate"};
  for (const Op& o : graph.ops())
    if (o.shape.size() > static_cast<size_t>(kMaxRank))
      return Error{"op '" + o.name + "': the simulator supports tensors of rank up to " + std::to_string(kMaxRank) +
                   ", got " + std::to_string(o.shape.size())};
  return Status::Ok();
}

Status FullRun::Run(TaskBuilder& builder, Engine& engine, const Strategy& strategy, Record record) {
  builder.BuildAll(strategy, &tg, &totals);
  if (Status s = CheckHorizon(totals); !s) return s;
  engine.Run(tg, &timing, record);
  last_end = engine.last_end();
  last_task = engine.last_task();
  builder.StaticMemory(strategy, {}, &static_bytes);
  return Status::Ok();
}

void FullRun::StoreInScheduleOrder() {
  const int32_t n = tg.num_tasks(), groups = static_cast<int32_t>(tg.group_task_begin.size());
  const size_t tasks = static_cast<size_t>(n);
  for (const auto* v : {&timing.ready, &timing.start, &timing.end})
    DEVPLACE_CHECK(v->size() == tasks, "StoreInScheduleOrder needs every task's times");
  std::vector<int32_t>& task_group = task_group_;
  ReserveLike(&task_group, tg.resource);  // room for as many tasks as the graph has room for
  task_group.resize(tasks);
  for (int32_t g = 0; g < groups; ++g)
    for (int32_t k = 0; k < tg.group_task_count[g]; ++k) task_group[tg.group_task_begin[g] + k] = g;
  // Groups by their first dequeued task, then those with no task (in group order).
  std::vector<uint8_t>& listed = listed_;
  listed.assign(static_cast<size_t>(groups), 0);
  std::vector<int32_t>& group_order = group_order_;
  group_order.clear();
  for (int32_t t : timing.order) {
    const int32_t g = task_group[t];
    if (!listed[g]) {
      listed[g] = 1;
      group_order.push_back(g);
    }
  }
  for (int32_t g = 0; g < groups; ++g)
    if (!listed[g]) group_order.push_back(g);
  std::vector<int32_t>& new_id = new_id_;
  ReorderGroups(group_order, &tg, &new_id, &permute_);
  const int32_t kept = tg.num_tasks();
  auto remap = [&new_id](int32_t t) { return t < 0 ? t : new_id[t]; };
  for (auto* v : {&timing.ready, &timing.start, &timing.end}) {
    std::vector<Time>& out = permute_.s64;
    ReserveLike(&out, *v);
    out.resize(static_cast<size_t>(kept));
    for (int32_t t = 0; t < n; ++t)
      if (new_id[t] >= 0) out[new_id[t]] = (*v)[t];
    v->swap(out);
  }
  for (auto* v : {&timing.res_prev, &timing.crit_prev}) {
    if (v->size() != tasks) {  // not recorded: sized to the kept tasks, unset
      v->assign(static_cast<size_t>(kept), -1);
      continue;
    }
    std::vector<int32_t>& out = permute_.s32;
    ReserveLike(&out, *v);
    out.resize(static_cast<size_t>(kept));
    for (int32_t t = 0; t < n; ++t)
      if (new_id[t] >= 0) out[new_id[t]] = remap((*v)[t]);
    v->swap(out);
  }
  for (int32_t& t : timing.order) t = new_id[t];
  for (int32_t& t : last_task) t = remap(t);
}

}  // namespace sim

Status ValidateSimOptions(const SimOptions& options) {
  if (options.segment_bytes < 1) return Error{"segment_bytes: must be >= 1"};
  if (options.max_segments < 1 || options.max_segments > 1024) return Error{"max_segments: must be in [1, 1024]"};
  if (!std::isfinite(options.optimizer_state_factor) || options.optimizer_state_factor < 0)
    return Error{"optimizer_state_factor: must be >= 0"};
  return Status::Ok();
}

struct Simulator::Impl {
  Impl(const Graph& g, const Topology& t, CostModel c, SimOptions o)
      : graph(g), topology(t), cost(std::move(c)), options(o), cache(g.num_ops(), t.num_devices()),
        builder(graph, topology, cost, options, &cache), plain_sim(graph, topology, cost, options, &cache) {}
  const Graph& graph;
  const Topology& topology;
  CostModel cost;
  SimOptions options;
  sim::PlainCostCache cache;
  sim::TaskBuilder builder;
  sim::PlainSim plain_sim;  // plain placements without a timeline
  sim::Engine engine;
  sim::PeakScratch peaks;
  sim::FullRun run;
  std::vector<DeviceId> plain;  // each op's device when the strategy is plain (else empty)
  std::vector<int64_t> peaks_of_cost;  // RunCost's: dynamic, then total peaks per device
};

Simulator::Simulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Simulator::Simulator(Simulator&&) noexcept = default;
Simulator& Simulator::operator=(Simulator&&) noexcept = default;
Simulator::~Simulator() = default;

Expected<Simulator> Simulator::Create(const Graph& graph, const Topology& topology, CostModel cost,
                                      SimOptions options) {
  if (Status s = ValidateSimOptions(options); !s) return s.error();
  if (Status s = sim::CheckGraph(graph); !s) return s.error();
  return Simulator(std::make_unique<Impl>(graph, topology, std::move(cost), options));
}

Expected<SimResult> Simulator::Run(const Strategy& strategy) {
  Impl& m = *impl_;
  if (Status s = sim::CheckStrategy(m.graph, m.topology, strategy, &m.plain); !s) return s.error();
  if (!m.plain.empty() && !m.options.keep_timeline && m.plain_sim.usable()) {
    m.builder.StaticMemory(strategy, m.plain, &m.run.static_bytes);
    return m.plain_sim.Run(m.plain, m.run.static_bytes);
  }
  const sim::Record record = m.options.keep_timeline ? sim::Record::kAll : sim::Record::kTimes;
  if (Status s = m.run.Run(m.builder, m.engine, strategy, record); !s) return s.error();
  return sim::Assemble(m.topology, m.run.tg, m.run.timing, m.run.totals, m.run.last_end, m.run.last_task,
                       m.run.static_bytes, m.peaks.DynamicPeaks(m.run.tg, m.run.timing, sim::MaxEnd(m.run.last_end)),
                       m.options);
}

Expected<double> Simulator::RunStepTime(const Strategy& strategy) {
  Impl& m = *impl_;
  if (Status s = sim::CheckStrategy(m.graph, m.topology, strategy, &m.plain); !s) return s.error();
  if (!m.plain.empty() && m.plain_sim.usable()) {
    Expected<sim::Time> step = m.plain_sim.StepTicks(m.plain);
    if (!step) return step.error();
    return static_cast<double>(*step) * sim::kSecondsPerTick;
  }
  m.builder.BuildAll(strategy, &m.run.tg, &m.run.totals);
  if (Status s = sim::CheckHorizon(m.run.totals); !s) return s.error();
  m.engine.Run(m.run.tg, &m.run.timing, sim::Record::kStepOnly);
  return static_cast<double>(sim::StepTicks(m.run.tg, m.engine.last_end())) * sim::kSecondsPerTick;
}

Expected<StepCost> Simulator::RunCost(const Strategy& strategy) {
  Impl& m = *impl_;
  if (Status s = sim::CheckStrategy(m.graph, m.topology, strategy, &m.plain); !s) return s.error();
  std::vector<int64_t>& peaks = m.peaks_of_cost;
  sim::Time step = 0;
  if (!m.plain.empty() && m.plain_sim.usable()) {
    m.builder.StaticMemory(strategy, m.plain, &m.run.static_bytes);
    Expected<sim::Time> ticks = m.plain_sim.StepTicksAndPeaks(m.plain, &peaks);
    if (!ticks) return ticks.error();
    step = *ticks;
  } else {
    if (Status s = m.run.Run(m.builder, m.engine, strategy, sim::Record::kTimes); !s) return s.error();
    step = sim::StepTicks(m.run.tg, m.run.last_end);
    const std::vector<int64_t>& dynamic = m.peaks.DynamicPeaks(m.run.tg, m.run.timing, sim::MaxEnd(m.run.last_end));
    peaks.assign(dynamic.begin(), dynamic.end());
  }
  for (size_t d = 0; d < peaks.size(); ++d) peaks[d] += m.run.static_bytes[d];
  return CostOf(static_cast<double>(step) * sim::kSecondsPerTick, peaks, m.topology);
}

namespace {
template <class V>
int64_t Bytes(const V& v) {
  return static_cast<int64_t>(v.capacity() * sizeof(typename V::value_type));
}
}  // namespace

int64_t Simulator::memory_bytes() const {
  const sim::TaskGraph& tg = impl_->run.tg;
  const sim::Timing& tm = impl_->run.timing;
  int64_t total = Bytes(tg.resource) + Bytes(tg.duration) + Bytes(tg.key) + Bytes(tg.kind) + Bytes(tg.first_hop) +
                  Bytes(tg.alive) + Bytes(tg.op) + Bytes(tg.part) + Bytes(tg.consumer) + Bytes(tg.bytes) +
                  Bytes(tg.mem_bytes) + Bytes(tg.mem_device) + Bytes(tg.fallback) + Bytes(tg.succ_off) +
                  Bytes(tg.succ_cnt) + Bytes(tg.pred_off) + Bytes(tg.pred_cnt) + Bytes(tg.succ_pool) +
                  Bytes(tg.pred_pool) + Bytes(tg.group_task_begin) + Bytes(tg.group_task_count) +
                  Bytes(tg.group_dep_begin) + Bytes(tg.group_dep_count) + Bytes(tg.dep_from) + Bytes(tg.dep_to) +
                  Bytes(tg.out_begin) + Bytes(tg.out_tasks);
  total += Bytes(tm.ready) + Bytes(tm.start) + Bytes(tm.end) + Bytes(tm.res_prev) + Bytes(tm.order) +
           Bytes(tm.crit_prev);
  total += impl_->cache.memory_bytes() + impl_->builder.memory_bytes() + impl_->plain_sim.memory_bytes() +
           impl_->engine.memory_bytes() +
           impl_->peaks.memory_bytes() + Bytes(impl_->plain);
  return total;
}

Expected<SimResult> Simulate(const Graph& graph, const Topology& topology, const Strategy& strategy,
                             const CostModel& cost, const SimOptions& options) {
  Expected<Simulator> sim = Simulator::Create(graph, topology, cost, options);
  if (!sim) return sim.error();
  return sim->Run(strategy);
}

}  // namespace devplace
