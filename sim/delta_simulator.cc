// DeltaSimulator's public methods: creation, validation of changes, making and asking about them (the incremental
// run is in delta.cc, queries in delta_query.cc), and the results of the current strategy.
#include <algorithm>
#include <chrono>
#include <string>

#include "core/check.h"
#include "sim/delta_impl.h"
#include "sim/objective.h"

namespace devplace {

using sim::Time;

namespace {
using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
}  // namespace

DeltaSimulator::DeltaSimulator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DeltaSimulator::DeltaSimulator(DeltaSimulator&&) noexcept = default;
DeltaSimulator& DeltaSimulator::operator=(DeltaSimulator&&) noexcept = default;
DeltaSimulator::~DeltaSimulator() = default;

Expected<DeltaSimulator> DeltaSimulator::Create(const Graph& graph, const Topology& topology, Strategy strategy,
                                                CostModel cost, SimOptions options) {
  if (Status s = ValidateSimOptions(options); !s) return s.error();
  if (Status s = sim::CheckGraph(graph); !s) return s.error();
  if (Status s = sim::CheckStrategy(graph, topology, strategy); !s) return s.error();
  auto impl = std::make_unique<Impl>(graph, topology, std::move(strategy), std::move(cost), options);
  if (Status s = impl->FullRebuild(); !s) return s.error();
  return DeltaSimulator(std::move(impl));
}

Status DeltaSimulator::SetStrategy(const Strategy& strategy) {
  Impl& m = *impl_;
  if (Status s = sim::CheckStrategy(m.graph, m.topology, strategy); !s) return s;
  m.Settle();  // (a strategy that fails is swapped back for the one before the query)
  // Copied config by config into the spare strategy (its lists keep their capacity), then swapped in; on an
  // error (a step too long to simulate) the previous strategy is swapped back and simulated again.
  m.spare_strategy.configs.resize(strategy.configs.size());
  std::copy(strategy.configs.begin(), strategy.configs.end(), m.spare_strategy.configs.begin());
  std::swap(m.strategy, m.spare_strategy);
  m.memo.valid = false;
  m.retimed = 0;
  if (Status s = m.FullRebuild(); !s) {
    std::swap(m.strategy, m.spare_strategy);
    if (Status back = m.FullRebuild(); !back) return back;
    return s;
  }
  return Status::Ok();
}

Status DeltaSimulator::SetConfig(OpId op, const OpConfig& config) {
  const std::pair<OpId, OpConfig> change{op, config};
  return SetConfigs({&change, 1});
}

Status DeltaSimulator::Impl::CheckChanges(std::span<const std::pair<OpId, OpConfig>> changes) const {
  for (const auto& [op, config] : changes) {
    if (op < 0 || op >= graph.num_ops())
      return Error{"op id " + std::to_string(op) + " is not in graph '" + graph.name() + "'"};
    if (Status s = sim::CheckConfig(graph, topology, op, config); !s) return s;
  }
  return Status::Ok();
}

Status DeltaSimulator::SetConfigs(std::span<const std::pair<OpId, OpConfig>> changes) {
  if (Status s = impl_->CheckChanges(changes); !s) return s;
  return impl_->ApplyInParts(changes);
}

Status DeltaSimulator::Impl::ApplyInParts(std::span<const std::pair<OpId, OpConfig>> changes, Time* query_step) {
  // A change to several ops, such as a group's forward, backward and update ops, reaches from the earliest of
  // them to past the latest: the sweep cannot stop at a shifted rest while new tasks are pending or removed ones
  // lie ahead, so it re-times everything in between, though nearly all of it only moves by one shift (measured
  // on the iterative episodes of bench/env_bench.cc: 95% of the re-timed tasks on nmt, 99% on transformer). In
  // parts of ops near each other in the order, each part stops soon after its own ops; ops closer than
  // kSamePartSlots go in one part, which re-times the stretch after them once. The latest part (by its ops'
  // tasks' earliest slots) goes first: its sweep then runs before the earlier parts shift the order in front of it.
  if (query_step == nullptr &&
      (pending_parts > 0 ? asked_changes.Equals(changes) : memo.valid && memo.changes.Equals(changes))) {
    // The change a query has just asked about, made from its outcome (and its made parts, which stay); when the
    // query is timed, this is its follow-up.
    const Clock::time_point start = timed.open ? Clock::now() : Clock::time_point{};
    const Status s = pending_parts > 0 ? MakeAskedParts() : Apply(changes);
    if (timed.open) timed.seconds += Seconds(Clock::now() - start);
    RecordTimedQuery();
    return s;
  }
  Settle();
  RecordTimedQuery();
  if (changes.size() <= 1) return Apply(changes, query_step);
  op_order.clear();
  for (size_t k = 0; k < changes.size(); ++k) {
    const int32_t first = run.tg.group_task_begin[changes[k].first];
    int32_t slot = -1;
    for (int32_t t = first; t < first + run.tg.group_task_count[changes[k].first]; ++t)
      slot = slot < 0 ? pos[t] : std::min(slot, pos[t]);
    op_order.push_back({slot, static_cast<int32_t>(k)});
  }
  // Latest first; among equal slots, in the order given (a repeated op's last config is the one that stays).
  std::sort(op_order.begin(), op_order.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  part_ends.clear();
  for (size_t x = 1; x <= op_order.size(); ++x)
    if (x == op_order.size() || op_order[x - 1].first - op_order[x].first >= sim::kSamePartSlots)
      part_ends.push_back(x);
  // In one part the change is made (or asked about) whole, so that a query's outcome stays for the change.
  if (part_ends.size() == 1) return Apply(changes, query_step);
  if (query_step == nullptr) return MakeParts(changes, nullptr);
  // A query of several parts is asked about by parts or whole (set_parts_queries; with kMeasured the choice is
  // timed with its follow-up).
  const int32_t span = op_order.front().first - op_order.back().first;
  const bool measured = parts_queries == PartsQueries::kMeasured;
  const bool by_parts = measured ? parts_chooser.ByParts(span) : parts_queries == PartsQueries::kByParts;
  const Clock::time_point start = measured ? Clock::now() : Clock::time_point{};
  const Status s = by_parts ? MakeParts(changes, query_step) : Apply(changes, query_step);
  if (s && measured) timed = {true, by_parts, span, Seconds(Clock::now() - start)};
  return s;
}

Status DeltaSimulator::Impl::MakeAskedParts() {
  // The made parts stay, and the asked part (still in `part`) is made from the query's outcome.
  pending_parts = 0;
  const Status s = Apply(part.view());
  retimed += pending_retimed;
  return s;
}

Status DeltaSimulator::Impl::MakeParts(std::span<const std::pair<OpId, OpConfig>> changes, Time* query_step) {
  changed_before.Clear();
  int64_t total = 0;
  for (size_t p = 0, x = 0; p < part_ends.size(); ++p) {
    part.Clear();
    for (; x < part_ends[p]; ++x) {
      const std::pair<OpId, OpConfig>& change = changes[op_order[x].second];
      changed_before.Append(change.first, strategy.configs[change.first]);
      part.Append(change.first, change.second);
    }
    // A query makes every part but the last (the earliest in the order) and asks about that one; the made parts
    // stay until the next call (Settle), which undoes them unless it makes the asked change.
    const bool asked = query_step != nullptr && p + 1 == part_ends.size();
    const int64_t made_retimed = total;
    const Status s = Apply(part.view(), asked ? query_step : nullptr);
    total += retimed;
    if (s && asked) {
      pending_parts = p;
      pending_retimed = made_retimed;
      asked_changes.Assign(changes);
      retimed = total;
      return s;
    }
    if (!s) {
      // A part that fails leaves its ops as they were; the parts before it are undone.
      if (Status undone = UndoParts(p, &total); !undone) return undone;
      retimed = 0;
      return s;
    }
  }
  retimed = total;
  return Status::Ok();
}

void DeltaSimulator::Impl::Settle() {
  if (pending_parts == 0) return;
  const Clock::time_point start = timed.open ? Clock::now() : Clock::time_point{};
  const size_t made = pending_parts;
  pending_parts = 0;
  const int64_t kept = retimed;  // last_retimed_tasks() still tells the last call's work
  int64_t undone = 0;
  const Status s = UndoParts(made, &undone);
  DEVPLACE_CHECK(s.ok(), "undoing the parts a query made: " + (s.ok() ? std::string() : s.error().message));
  retimed = kept;
  if (timed.open) {
    timed.seconds += Seconds(Clock::now() - start);
    RecordTimedQuery();
  }
}

void DeltaSimulator::Impl::RecordTimedQuery() {
  if (!timed.open) return;
  parts_chooser.Record(timed.span, timed.by_parts, timed.seconds);
  timed.open = false;
}

void DeltaSimulator::set_parts_queries(PartsQueries how) {
  impl_->Settle();
  impl_->RecordTimedQuery();
  impl_->parts_queries = how;
}

Status DeltaSimulator::Impl::UndoParts(size_t made, int64_t* retimed_total) {
  // Each part is undone whole, to the strategy simulated before it was made (so none can fail for its length).
  const auto before = changed_before.view();
  for (size_t p = made; p-- > 0;) {
    const size_t begin = p == 0 ? 0 : part_ends[p - 1];
    if (Status s = Apply(before.subspan(begin, part_ends[p] - begin)); !s) return s;
    *retimed_total += retimed;
  }
  return Status::Ok();
}

Expected<double> DeltaSimulator::StepTimeIf(std::span<const std::pair<OpId, OpConfig>> changes) {
  if (Status s = impl_->CheckChanges(changes); !s) return s.error();
  Time step = 0;
  if (Status s = impl_->ApplyInParts(changes, &step); !s) return s.error();
  return static_cast<double>(step) * sim::kSecondsPerTick;
}

Expected<double> DeltaSimulator::StepTimeIf(OpId op, const OpConfig& config) {
  const std::pair<OpId, OpConfig> change{op, config};
  return StepTimeIf({&change, 1});
}

const Strategy& DeltaSimulator::strategy() const {
  impl_->Settle();
  return impl_->strategy;
}

double DeltaSimulator::step_time() const {
  impl_->Settle();
  return static_cast<double>(impl_->StepTicks()) * sim::kSecondsPerTick;
}

SimResult DeltaSimulator::result() const {
  impl_->Settle();
  const Impl& m = *impl_;
  m.Materialize();
  std::vector<Time> last_end(static_cast<size_t>(m.run.tg.num_resources), -1);
  for (size_t r = 0; r < last_end.size(); ++r)
    if (m.run.last_task[r] >= 0) last_end[r] = m.End(m.run.last_task[r]);
  return sim::Assemble(m.topology, m.run.tg, m.materialized, m.run.totals, last_end, m.run.last_task,
                       m.run.static_bytes, m.peaks.DynamicPeaks(m.run.tg, m.materialized, sim::MaxEnd(last_end)),
                       m.options);
}

bool DeltaSimulator::oom() const {
  impl_->Settle();
  const Impl& m = *impl_;
  const std::vector<int64_t>& peaks = m.RiskyPeaks();
  for (DeviceId d = 0; d < m.topology.num_devices(); ++d)
    if (peaks[d] > m.topology.device(d).memory_bytes) return true;
  return false;
}

StepCost DeltaSimulator::step_cost() const {
  const double step = step_time();  // (settles first)
  return CostOf(step, impl_->RiskyPeaks(), impl_->topology);
}

std::vector<int64_t> DeltaSimulator::device_peaks() const {
  impl_->Settle();
  const Impl& m = *impl_;
  if (m.peaks_valid) return m.peaks_memo;
  m.MaterializeTimes();
  Time max_end = 0;
  for (int32_t t : m.run.last_task)
    if (t >= 0) max_end = std::max(max_end, m.End(t));
  m.peaks_memo = m.peaks.DynamicPeaks(m.run.tg, m.materialized, max_end);
  for (DeviceId d = 0; d < m.topology.num_devices(); ++d) m.peaks_memo[d] += m.run.static_bytes[d];
  m.peaks_valid = true;
  return m.peaks_memo;
}

int64_t DeltaSimulator::last_retimed_tasks() const { return impl_->retimed; }

DeltaSimulator::SweepCounts DeltaSimulator::sweep_counts() const { return impl_->sweep_counts; }

}  // namespace devplace
