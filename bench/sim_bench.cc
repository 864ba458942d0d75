// Simulator speed on 8 GPUs (configs/topologies/dgx1-v100.yaml) with training graphs of about 1k, 10k and 50k
// ops: layered random graphs made here (src=0) and, when built with devplace_datasets, members of the "nmt"
// (src=1) and "transformer" (src=2) families (seed 42, target_ops = the size).
//   Full/<ops>/<placement>: Simulator::Run (the reusable simulator a search uses); items = tasks simulated.
//   Counters run_Mtasks_s and steptime_Mtasks_s: Run and RunStepTime measured side by side (thread CPU time).
//   Simulate/<ops>/contiguous: the one-shot Simulate() (also builds the simulator and prices every op).
//   Delta/<ops>/<placement>: DeltaSimulator::SetConfig moving one random op to another random device, plus
//   step_time(), then back (untimed): changes back to back, as a search makes them. Counters (thread CPU time):
//   the median and mean change over all changes (delta_us, delta_mean_us) against the median and mean
//   Simulator::RunStepTime of every 20th change's strategy (after two untimed first runs), measured in blocks of
//   10 all through the run, so that both cover the same minutes of a machine whose speed drifts, while few changes
//   find their data evicted by the full runs (speedup, speedup_mean); for those, the same change made again right
//   after the full runs, when the caches hold the full simulation's data rather than the delta's (delta_cold_us,
//   speedup_cold), and that change + result() against Simulator::Run (speedup_result), medians; resimulated =
//   tasks re-simulated per change, over all changes (the rest keep or shift their times). Made changes also split
//   the mean by reach: large_share, the share of changes that re-time more than a quarter of the tasks (DeltaShape's
//   large changes); large_time_share, their share of the summed change time; large_vs_full and other_vs_full, the
//   mean large and other change against the mean full step-time run (so speedup_mean = 1 / (large_share *
//   large_vs_full + (1 - large_share) * other_vs_full)); reach_1pct_time_share and reach_5pct_time_share, the share
//   of the summed change time that changes re-timing more than 1% and 5% of the tasks take (speedup_mean / (1 -
//   share) is what the mean would be if those changes cost nothing).
//   Delta/query_<placement>/<ops>: the same changes asked with DeltaSimulator::StepTimeIf (the step time the
//   change would give, nothing kept; how a search evaluates a proposal it may reject), same counters but result().
//   Delta/ask_make_<placement>/<ops>: each change asked and then made (a search's accepted proposal), timed
//   together, then undone (untimed).
//   DeltaFixed/<src>: a fixed amount of delta work for instruction counts (callgrind) and paired timings: 400 of
//   the Delta benchmark's random changes on the random 10k-op placement (same seeds), each made, its step time
//   read, and undone, all in one iteration. Counters (DeltaSimulator::sweep_counts): sweeps, dense (the sweeps
//   that went over to re-timing the rest in one pass for a large change), dense_stopped (those that stopped at a
//   shifted rest), ordered (those re-timed along the previous order; the others by the plain event loop) and
//   ordered_jumps (the stretches those passes moved as a whole).
//   DeltaNumbering/<src>/<numbering>: DeltaFixed's work (the same ops moved to the same devices) on the same graph
//   with its ops numbered 0: as built, 1: by start time in the base placement's schedule (what a re-timing walks
//   in order), 2: at random: how the delta simulator's speed depends on where a task's data lies (task ids follow
//   op ids). Tie-breaks follow the ids, so a renumbered graph's schedule may differ where tasks tie.
//   DeltaShape/<src>: the shape of DeltaFixed's large changes (those the delta simulator re-times more than a quarter
//   of the tasks for; DeltaShapeMedium/<src>: those it re-times 5-25% of the tasks for), from full simulations of the
//   placement before and after each change (tasks matched by tie-break key, resource and duration; a task moved when
//   its start changed; bench/delta_shape.h), means per change (`changes` of them): tasks moved; binding_roots, the
//   moved tasks whose binding parent in the old schedule (Timing::crit_prev: its resource predecessor when it waited
//   for the resource, else its latest input) is missing or moved by a different amount (every other moved task moves
//   with its parent, so the moved tasks are that many subtrees of the binding forest, each shifted whole);
//   resource_runs, maximal runs of equal shift in each resource's new order; cross_edges, inputs that are not a task's
//   binding parent and moved more than the task (each one a slack to prove); order_breaks, tasks that moved less than
//   their binding parent (an order change or a new binding input); queue_swaps, consecutive tasks of a resource's old
//   order that run in the other order after the change; tight_inner_edges, such inputs that moved as much as the task
//   with an old slack below the shift (what a filter on each task's least input slack would examine in vain);
//   order_descents and order_inversions, the same for the dequeue order of all resources together (consecutive tasks,
//   and pairs); keeping_queues_share, the share of the changes with no queue swap (for them, timing the tasks along the
//   old order with the new tasks put in gives the new schedule exactly); ordered_vs_full, a pass over the new dequeue
//   order timing every task with no ready queue (bench::OrderedRetimingSeconds) against a full step-time run
//   (`RunStepTime`, thread CPU time, medians of 7). What a re-timing by lazily shifted subtrees or runs, or along the
//   old order, would have to touch, against the tasks moved today.
//   Placeto/<ops>/src: the figure comparable with Placeto's simulator: whole simulations per second (Run and
//   RunStepTime, thread CPU time) of 16 random group placements (each colocation group on a uniformly random one
//   of the 8 GPUs), cycled; placeto_tasks = tasks as Placeto counts them (one compute task per op, one transfer
//   per edge between different devices that carries bytes), and *_placeto_Mtasks_s the rates in those tasks.
// Placements: "contiguous" splits the topological order into 8 equal blocks (backward and update ops follow their
// forward op); "random" puts each colocation group on a random device.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "core/topology_yaml.h"
#include "core/training_graph.h"
#include "bench/delta_shape.h"
#include "bench/thread_cpu_clock.h"
#include "sim/simulator.h"
#ifdef DEVPLACE_BENCH_FAMILIES
#include "datasets/families.h"
#endif

namespace devplace {
namespace {

template <class T>
T Check(Expected<T> e) {
  if (!e) throw std::runtime_error(e.error().message);
  return std::move(e).value();
}

uint64_t Below(std::mt19937_64& rng, uint64_t n) { return rng() % n; }

// A layered forward graph (widths 1-4, fan-in 1-3 from the previous layer, matmul-like ops with weights and
// elementwise ops without), scaled so that its training graph has about `target` ops.
Graph TrainingGraph(int target, uint64_t seed) {
  std::mt19937_64 rng(seed);
  GraphBuilder b("layered" + std::to_string(target));
  const int forward_ops = target * 10 / 25;  // about 2.5 training ops per forward op
  std::vector<OpId> prev;
  int made = 0;
  while (made < forward_ops) {
    const int width = 1 + static_cast<int>(Below(rng, 4));
    std::vector<OpId> layer;
    for (int k = 0; k < width && made < forward_ops; ++k, ++made) {
      Op op;
      op.name = "op" + std::to_string(made);
      const bool weighted = Below(rng, 2) == 0;
      op.type = weighted ? "matmul" : "relu";
      const int64_t batch = 64, hidden = 256 << Below(rng, 3);
      op.shape = {batch, hidden};
      op.param_bytes = weighted ? hidden * hidden * 4 : 0;
      op.flops = weighted ? 2.0 * batch * hidden * hidden : static_cast<double>(batch * hidden);
      op.dims = {{DimKind::kSample, 0, 0, batch}, {DimKind::kParameter, 1, -1, hidden}};
      const OpId id = b.add_op(std::move(op));
      std::vector<OpId> from = prev;
      const int fan_in = std::min<int>(static_cast<int>(from.size()), 1 + static_cast<int>(Below(rng, 3)));
      for (int f = 0; f < fan_in; ++f) {
        const size_t pick = Below(rng, from.size());
        b.add_edge(from[pick], id);
        from.erase(from.begin() + static_cast<std::ptrdiff_t>(pick));
      }
      layer.push_back(id);
    }
    prev = std::move(layer);
  }
  return Check(DeriveTrainingGraph(Check(std::move(b).Build())));
}

// Device of every op: by forward op (backward and update ops follow their forward op).
Strategy Placement(const Graph& g, int devices, bool random, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<DeviceId> device(static_cast<size_t>(g.num_ops()), 0);
  const auto& order = g.topological_order();
  int forward = 0;
  for (OpId o : order)
    if (g.op(o).role == OpRole::kForward) ++forward;
  int rank = 0;
  for (OpId o : order) {
    if (g.op(o).role != OpRole::kForward) continue;
    device[o] = random ? static_cast<DeviceId>(Below(rng, devices)) : static_cast<DeviceId>(rank * devices / forward);
    ++rank;
  }
  for (OpId o = 0; o < g.num_ops(); ++o)
    if (g.op(o).role != OpRole::kForward) device[o] = device[g.find(g.op(o).forward_op)];
  return Strategy::FromPlacement(device);
}

struct Fixture {
  Graph graph;
  Topology topology;
};

// Graph sources: 0 = layered random (this file), 1 = the "nmt" family, 2 = the "transformer" family (datasets/).
const char* const kSources[] = {"layered", "nmt", "transformer"};

Graph MakeGraph(int ops, int source) {
  if (source == 0) return TrainingGraph(ops, 42);
#ifdef DEVPLACE_BENCH_FAMILIES
  FamilyOptions options;
  options.target_ops = ops;
  return Check(GenerateFamilyMember(kSources[source], 42, options));
#else
  throw std::runtime_error("built without devplace_datasets");
#endif
}

const Fixture& Get(int ops, int source = 0) {
  static std::unordered_map<int, Fixture> cache;  // benchmark fixtures, built once per (size, source)
  const int id = ops * 4 + source;
  auto it = cache.find(id);
  if (it == cache.end()) {
    Fixture f{MakeGraph(ops, source), Check(ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) +
                                                             "/configs/topologies/dgx1-v100.yaml"))};
    it = cache.emplace(id, std::move(f)).first;
  }
  return it->second;
}

using bench::ThreadCpuClock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

void Full(benchmark::State& state, bool random) {
  const Fixture& f = Get(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const Strategy s = Placement(f.graph, f.topology.num_devices(), random, 7);
  Simulator sim = Check(Simulator::Create(f.graph, f.topology, MakeAnalyticCostModel()));
  const SimResult first = Check(sim.Run(s));
  for (auto _ : state) benchmark::DoNotOptimize(Check(sim.Run(s)).step_time);
  state.SetItemsProcessed(state.iterations() * first.num_tasks);
  // Side by side (thread CPU time, medians of 15 each): the full result and the step time only.
  std::vector<double> run_s, step_s;
  for (int k = 0; k < 15; ++k) {
    const double t0 = ThreadCpuClock::now();
    benchmark::DoNotOptimize(Check(sim.Run(s)).step_time);
    const double t1 = ThreadCpuClock::now();
    benchmark::DoNotOptimize(Check(sim.RunStepTime(s)));
    const double t2 = ThreadCpuClock::now();
    run_s.push_back(t1 - t0);
    step_s.push_back(t2 - t1);
  }
  state.counters["run_Mtasks_s"] = first.num_tasks / Median(run_s) * 1e-6;
  state.counters["steptime_Mtasks_s"] = first.num_tasks / Median(step_s) * 1e-6;
  state.counters["ops"] = f.graph.num_ops();
  state.counters["tasks"] = first.num_tasks;
  state.counters["bytes_per_task"] = static_cast<double>(sim.memory_bytes()) / first.num_tasks;
  state.counters["step_ms"] = first.step_time * 1e3;
}

void OneShot(benchmark::State& state) {
  const Fixture& f = Get(static_cast<int>(state.range(0)));
  const Strategy s = Placement(f.graph, f.topology.num_devices(), false, 7);
  const CostModel cost = MakeAnalyticCostModel();
  int32_t tasks = 0;
  for (auto _ : state) tasks = Check(Simulate(f.graph, f.topology, s, cost)).num_tasks;
  state.SetItemsProcessed(state.iterations() * tasks);
  state.counters["tasks"] = tasks;
}


// A random group placement: every colocation group (an op without one is its own group) on a random device.
Strategy RandomGroups(const Graph& g, int devices, std::mt19937_64& rng) {
  std::unordered_map<std::string, DeviceId> group_device;
  std::vector<DeviceId> device(static_cast<size_t>(g.num_ops()));
  for (OpId o = 0; o < g.num_ops(); ++o) {
    const std::string& group = g.op(o).colocation.empty() ? g.op(o).name : g.op(o).colocation;
    auto [it, inserted] = group_device.emplace(group, 0);
    if (inserted) it->second = static_cast<DeviceId>(Below(rng, devices));
    device[o] = it->second;
  }
  return Strategy::FromPlacement(device);
}

void Placeto(benchmark::State& state) {
  const Fixture& f = Get(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  std::mt19937_64 rng(11);
  std::vector<Strategy> placements;
  double placeto_tasks = 0, tasks = 0;
  for (int k = 0; k < 16; ++k) {
    placements.push_back(RandomGroups(f.graph, f.topology.num_devices(), rng));
    int64_t cross = 0;
    for (const Edge& e : f.graph.edges())
      cross += e.bytes > 0 && placements.back().configs[e.src].devices[0] != placements.back().configs[e.dst].devices[0];
    placeto_tasks += static_cast<double>(f.graph.num_ops() + cross) / 16;
  }
  Simulator sim = Check(Simulator::Create(f.graph, f.topology, MakeAnalyticCostModel()));
  for (const Strategy& s : placements) tasks += Check(sim.Run(s)).num_tasks / 16.0;
  size_t next = 0;
  for (auto _ : state) benchmark::DoNotOptimize(Check(sim.Run(placements[next++ % placements.size()])).step_time);
  state.SetItemsProcessed(state.iterations());
  // Side by side (thread CPU time): every placement run with all results and with the step time only, 4 rounds.
  double run_s = 0, step_s = 0;
  for (int round = 0; round < 4; ++round)
    for (const Strategy& s : placements) {
      const double t0 = ThreadCpuClock::now();
      benchmark::DoNotOptimize(Check(sim.Run(s)).step_time);
      const double t1 = ThreadCpuClock::now();
      benchmark::DoNotOptimize(Check(sim.RunStepTime(s)));
      run_s += t1 - t0;
      step_s += ThreadCpuClock::now() - t1;
    }
  const double runs = 4.0 * static_cast<double>(placements.size());
  state.counters["ops"] = f.graph.num_ops();
  state.counters["tasks"] = tasks;
  state.counters["placeto_tasks"] = placeto_tasks;
  state.counters["run_sims_s"] = runs / run_s;
  state.counters["steptime_sims_s"] = runs / step_s;
  state.counters["run_placeto_Mtasks_s"] = placeto_tasks * runs / run_s * 1e-6;
  state.counters["steptime_placeto_Mtasks_s"] = placeto_tasks * runs / step_s * 1e-6;
}

// How a Delta case treats each change: made (and undone), only asked (StepTimeIf), or asked and then made (a
// search's accepted proposal: the making reuses the query's work).
enum class DeltaMode { kMake, kAsk, kAskThenMake };

// The Delta benchmarks' change: a uniformly random op moved whole to another uniformly random device.
std::pair<OpId, OpConfig> RandomMove(const Graph& g, const Strategy& now, int devices, std::mt19937_64& rng) {
  const OpId op = static_cast<OpId>(Below(rng, static_cast<uint64_t>(g.num_ops())));
  const DeviceId from = now.configs[op].devices[0];
  return {op, OpConfig{{static_cast<DeviceId>((from + 1 + Below(rng, devices - 1)) % devices)}, {}}};
}

void Delta(benchmark::State& state, bool random, DeltaMode mode) {
  const bool query = mode == DeltaMode::kAsk;
  using Clock = ThreadCpuClock;
  const Fixture& f = Get(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const int devices = f.topology.num_devices();
  const Strategy base = Placement(f.graph, devices, random, 7);
  const CostModel cost = MakeAnalyticCostModel();
  DeltaSimulator delta = Check(DeltaSimulator::Create(f.graph, f.topology, base, cost));
  Simulator full = Check(Simulator::Create(f.graph, f.topology, cost));
  // Untimed first runs, as the delta simulator's Create made one: the full simulator's scratch grows in them.
  benchmark::DoNotOptimize(Check(full.RunStepTime(base)));
  benchmark::DoNotOptimize(Check(full.Run(base)).step_time);
  std::mt19937_64 rng(99);
  std::vector<double> delta_s, cold_s, result_s, full_s, full_step_s;  // delta_s: every change
  std::vector<int64_t> retimed_by_change;                              // beside delta_s
  std::vector<std::pair<OpId, OpConfig>> block;  // the changes awaiting their comparison
  double step_sum = 0;
  int64_t changes = 0;
  // Makes a change (and its step time) and undoes it; returns the seconds the change took. A query only asks.
  auto change = [&](OpId op, const OpConfig& config, bool with_result) {
    if (query) {
      const double q0 = Clock::now();
      step_sum += Check(delta.StepTimeIf(op, config));
      return Clock::now() - q0;
    }
    const OpConfig old = delta.strategy().configs[op];
    const double t0 = Clock::now();
    if (mode == DeltaMode::kAskThenMake) benchmark::DoNotOptimize(Check(delta.StepTimeIf(op, config)));
    if (!delta.SetConfig(op, config).ok()) state.SkipWithError("SetConfig failed");
    step_sum += delta.step_time();
    const double t1 = Clock::now();
    if (with_result) {
      benchmark::DoNotOptimize(delta.result().step_time);  // memory peaks and critical path, computed on demand
      result_s.push_back(t1 - t0 + Clock::now() - t1);
    }
    if (!delta.SetConfig(op, old).ok()) state.SkipWithError("SetConfig failed");  // back to the base placement
    return t1 - t0;
  };
  for (auto _ : state) {
    const auto [op, moved] = RandomMove(f.graph, delta.strategy(), devices, rng);
    const double seconds = change(op, moved, false);  // timed by the benchmark too (the undo included)
    ++changes;
    delta_s.push_back(seconds);
    retimed_by_change.push_back(delta.last_retimed_tasks());
    if (changes % 20 != 0) continue;  // every 20th change is compared, all through the run
    state.PauseTiming();
    block.emplace_back(op, moved);
    if (block.size() == 10) {  // the full runs of the block's strategies, then each change once more after them
      for (const auto& [bop, config] : block) {
        Strategy s = delta.strategy();
        s.configs[bop] = config;
        const double r0 = Clock::now();
        benchmark::DoNotOptimize(Check(full.RunStepTime(s)));
        const double r1 = Clock::now();
        benchmark::DoNotOptimize(Check(full.Run(s)).step_time);
        full_step_s.push_back(r1 - r0);
        full_s.push_back(Clock::now() - r1);
        cold_s.push_back(change(bop, config, !query));
      }
      block.clear();
    }
    state.ResumeTiming();
  }
  benchmark::DoNotOptimize(step_sum);
  const double d = Median(delta_s), c = Median(cold_s), fs = Median(full_step_s), dr = Median(result_s),
               fr = Median(full_s), dm = Mean(delta_s), fm = Mean(full_step_s);
  state.counters["delta_us"] = d * 1e6;              // SetConfig + step_time(), back to back
  state.counters["delta_mean_us"] = dm * 1e6;
  state.counters["full_step_mean_us"] = fm * 1e6;
  state.counters["speedup_mean"] = dm > 0 ? fm / dm : 0;
  state.counters["delta_cold_us"] = c * 1e6;         // the same right after full runs
  state.counters["full_step_us"] = fs * 1e6;         // Simulator::RunStepTime
  state.counters["speedup"] = d > 0 ? fs / d : 0;
  state.counters["speedup_cold"] = c > 0 ? fs / c : 0;
  if (!query) {
    state.counters["delta_result_us"] = dr * 1e6;    // SetConfig + step_time() + result(), after full runs
    state.counters["full_result_us"] = fr * 1e6;     // Simulator::Run
    state.counters["speedup_result"] = dr > 0 ? fr / dr : 0;
    const int64_t tasks = delta.result().num_tasks;
    double large_s = 0, other_s = 0, reach_1pct_s = 0, reach_5pct_s = 0;
    int64_t large = 0;
    for (size_t k = 0; k < delta_s.size(); ++k) {
      const bool is_large = retimed_by_change[k] * 4 > tasks;
      (is_large ? large_s : other_s) += delta_s[k];
      large += is_large;
      if (retimed_by_change[k] * 100 > tasks) reach_1pct_s += delta_s[k];
      if (retimed_by_change[k] * 20 > tasks) reach_5pct_s += delta_s[k];
    }
    const int64_t other = changes - large;
    state.counters["large_share"] = static_cast<double>(large) / static_cast<double>(std::max<int64_t>(1, changes));
    state.counters["large_time_share"] = large_s + other_s > 0 ? large_s / (large_s + other_s) : 0;
    state.counters["large_vs_full"] = large > 0 && fm > 0 ? large_s / static_cast<double>(large) / fm : 0;
    state.counters["other_vs_full"] = other > 0 && fm > 0 ? other_s / static_cast<double>(other) / fm : 0;
    const double summed = large_s + other_s;
    state.counters["reach_1pct_time_share"] = summed > 0 ? reach_1pct_s / summed : 0;
    state.counters["reach_5pct_time_share"] = summed > 0 ? reach_5pct_s / summed : 0;
  }
  double retimed = 0;
  for (int64_t r : retimed_by_change) retimed += static_cast<double>(r);
  state.counters["resimulated"] = retimed / static_cast<double>(std::max<int64_t>(1, changes));
  state.counters["tasks"] = delta.result().num_tasks;
}

// Args: {target ops, graph source}.
void Sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ops", "src"});
  for (int source = 0; source < 3; ++source) {
#ifndef DEVPLACE_BENCH_FAMILIES
    if (source > 0) break;
#endif
    for (int ops : {1000, 10000, 50000}) b->Args({ops, source});
  }
  b->Unit(benchmark::kMicrosecond);
}

// DeltaFixed's 400 changes on `base` (each is undone, so every one starts from it).
std::vector<std::pair<OpId, OpConfig>> FixedMoves(const Graph& g, const Strategy& base, int devices) {
  std::mt19937_64 rng(99);
  std::vector<std::pair<OpId, OpConfig>> moves;
  for (int k = 0; k < 400; ++k) moves.push_back(RandomMove(g, base, devices, rng));
  return moves;
}

// Makes each of `moves`, reads the step time and undoes it, once per benchmark iteration.
void MakeAndUndo(benchmark::State& state, DeltaSimulator& delta, const std::vector<std::pair<OpId, OpConfig>>& moves) {
  double sum = 0;
  for (auto _ : state) {
    for (const auto& [op, moved] : moves) {
      const OpConfig old = delta.strategy().configs[op];
      if (!delta.SetConfig(op, moved).ok()) state.SkipWithError("SetConfig failed");
      sum += delta.step_time();
      if (!delta.SetConfig(op, old).ok()) state.SkipWithError("SetConfig failed");
    }
  }
  benchmark::DoNotOptimize(sum);
}

// A fixed run of Delta's changes (see the file comment); the undo counts too.
void DeltaFixed(benchmark::State& state) {
  const Fixture& f = Get(10000, static_cast<int>(state.range(0)));
  const int devices = f.topology.num_devices();
  const Strategy base = Placement(f.graph, devices, true, 7);
  DeltaSimulator delta = Check(DeltaSimulator::Create(f.graph, f.topology, base, MakeAnalyticCostModel()));
  MakeAndUndo(state, delta, FixedMoves(f.graph, base, devices));
  const DeltaSimulator::SweepCounts c = delta.sweep_counts();
  state.counters["sweeps"] = c.sweeps;
  state.counters["dense"] = c.dense;
  state.counters["dense_stopped"] = c.dense_stopped;
  state.counters["ordered"] = c.ordered;
  state.counters["ordered_jumps"] = c.ordered_jumps;
}
BENCHMARK(DeltaFixed)->Arg(0)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kMillisecond);

// DeltaShape's measurement over the changes that re-time more than `min_share` and at most `max_share` of the tasks.
void ShapeOfChanges(benchmark::State& state, double min_share, double max_share) {
  const Fixture& f = Get(10000, static_cast<int>(state.range(0)));
  const int devices = f.topology.num_devices();
  const Strategy base = Placement(f.graph, devices, true, 7);
  const CostModel cost = MakeAnalyticCostModel();
  DeltaSimulator delta = Check(DeltaSimulator::Create(f.graph, f.topology, base, cost));
  const SimOptions options;
  bench::FullScheduler scheduler(f.graph, f.topology, cost, options);
  const sim::FullRun before = scheduler.Run(base);
  bench::ShapeCounts shape;
  Simulator full = Check(Simulator::Create(f.graph, f.topology, cost));
  double ordered_s = 0, full_step_s = 0;
  for (auto _ : state) {
    for (const auto& [op, config] : FixedMoves(f.graph, base, devices)) {
      if (!delta.SetConfig(op, config).ok()) state.SkipWithError("SetConfig failed");
      const int64_t retimed = delta.last_retimed_tasks();
      if (!delta.SetConfig(op, base.configs[op]).ok()) state.SkipWithError("SetConfig failed");
      const double share = static_cast<double>(retimed) / static_cast<double>(before.tg.num_tasks());
      if (share <= min_share || share > max_share) continue;
      Strategy changed = base;
      changed.configs[op] = config;
      const sim::FullRun after = scheduler.Run(changed);
      shape.Add(before, after);
      std::vector<double> pass_s, step_s;
      for (int k = 0; k < 7; ++k) {
        pass_s.push_back(bench::OrderedRetimingSeconds(after));
        const double t0 = ThreadCpuClock::now();
        benchmark::DoNotOptimize(Check(full.RunStepTime(changed)));
        step_s.push_back(ThreadCpuClock::now() - t0);
      }
      ordered_s += Median(pass_s);
      full_step_s += Median(step_s);
    }
  }
  shape.Report(state);
  state.counters["ordered_vs_full"] = full_step_s > 0 ? ordered_s / full_step_s : 0;
}
void DeltaShape(benchmark::State& state) { ShapeOfChanges(state, 0.25, 1.0); }
void DeltaShapeMedium(benchmark::State& state) { ShapeOfChanges(state, 0.05, 0.25); }
BENCHMARK(DeltaShape)->Arg(0)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond);
BENCHMARK(DeltaShapeMedium)->Arg(0)->Arg(1)->Arg(2)->Iterations(1)->Unit(benchmark::kSecond);

// `g` with op `order[k]` as op k (new_id its inverse): the same ops and edges (added in order of their new source).
Graph Renumbered(const Graph& g, const std::vector<OpId>& order, const std::vector<OpId>& new_id) {
  GraphBuilder b(g.name());
  for (OpId o : order) b.add_op(g.op(o));
  std::vector<int32_t> edges(static_cast<size_t>(g.num_edges()));
  for (int32_t e = 0; e < g.num_edges(); ++e) edges[e] = e;
  std::stable_sort(edges.begin(), edges.end(),
                   [&](int32_t x, int32_t y) { return new_id[g.edge(x).src] < new_id[g.edge(y).src]; });
  for (int32_t e : edges) b.add_edge(new_id[g.edge(e).src], new_id[g.edge(e).dst], g.edge(e).bytes);
  return Check(std::move(b).Build());
}

void DeltaNumbering(benchmark::State& state) {
  const Fixture& f = Get(10000, static_cast<int>(state.range(0)));
  const int devices = f.topology.num_devices();
  const Strategy base = Placement(f.graph, devices, true, 7);
  const CostModel cost = MakeAnalyticCostModel();
  const int32_t n = f.graph.num_ops();
  std::vector<OpId> order(static_cast<size_t>(n));  // order[k]: the op numbered k
  for (int32_t o = 0; o < n; ++o) order[o] = o;
  if (state.range(1) == 1) {
    SimOptions options;
    options.keep_timeline = true;
    const SimResult r = Check(Simulate(f.graph, f.topology, base, cost, options));
    std::vector<double> start(static_cast<size_t>(n), 0.0);
    for (const TimelineTask& t : r.timeline)
      if (t.kind == TimelineTask::Kind::kCompute) start[t.op] = t.start;
    std::stable_sort(order.begin(), order.end(), [&](OpId a, OpId b) { return start[a] < start[b]; });
  } else if (state.range(1) == 2) {
    std::mt19937_64 shuffle_rng(5);
    std::shuffle(order.begin(), order.end(), shuffle_rng);
  }
  std::vector<OpId> new_id(static_cast<size_t>(n));
  for (int32_t k = 0; k < n; ++k) new_id[order[k]] = k;
  const Graph g = Renumbered(f.graph, order, new_id);
  Strategy renumbered = base;
  for (int32_t k = 0; k < n; ++k) renumbered.configs[k] = base.configs[order[k]];
  DeltaSimulator delta = Check(DeltaSimulator::Create(g, f.topology, renumbered, cost));
  std::vector<std::pair<OpId, OpConfig>> moves = FixedMoves(f.graph, base, devices);
  for (auto& move : moves) move.first = new_id[move.first];
  MakeAndUndo(state, delta, moves);
}
BENCHMARK(DeltaNumbering)->ArgsProduct({{0, 1, 2}, {0, 1, 2}})->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(Full, contiguous, false)->Apply(Sizes);
BENCHMARK_CAPTURE(Full, random, true)->Apply(Sizes);
BENCHMARK(Placeto)->Apply(Sizes);
BENCHMARK(OneShot)->Name("Simulate/contiguous")->Arg(1000)->Arg(10000)->Arg(50000)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(Delta, contiguous, false, DeltaMode::kMake)->Apply(Sizes);
BENCHMARK_CAPTURE(Delta, random, true, DeltaMode::kMake)->Apply(Sizes);
BENCHMARK_CAPTURE(Delta, query_contiguous, false, DeltaMode::kAsk)->Apply(Sizes);
BENCHMARK_CAPTURE(Delta, query_random, true, DeltaMode::kAsk)->Apply(Sizes);
BENCHMARK_CAPTURE(Delta, ask_make_contiguous, false, DeltaMode::kAskThenMake)->Apply(Sizes);
BENCHMARK_CAPTURE(Delta, ask_make_random, true, DeltaMode::kAskThenMake)->Apply(Sizes);

}  // namespace
}  // namespace devplace

BENCHMARK_MAIN();
