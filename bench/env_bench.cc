// Placement-environment speed on 8 GPUs (configs/topologies/dgx1-v100.yaml) with "nmt" family training graphs
// (seed 42) of about 1k and 10k ops (docs/performance.md, docs/environments.md).
//   IterativeStep/<ops>: the iterative (Placeto) MDP's PlacementState::ApplyAction, a whole episode per iteration
//     (so that the mean covers every step of an episode, whatever the machine's speed): every group starts on one
//     device and moves in turn to a uniformly random device (memory mask off, so the three step benchmarks make the
//     same moves); includes the delta simulation and the OOM check. items = steps; per_step = mean CPU time per
//     step; allocs_first_episode / allocs_per_step = operator new calls per step in the run's first episode and
//     in the later ones (tests/testing/allocation_count.h; the states borrow the game's delta simulator, so the
//     later episodes only grow its lists where they need more room than any episode before).
//   DeltaStepTimeOnly/<ops>: the same episodes' moves through DeltaSimulator::SetConfigs + step_time() only (no OOM
//     check), one simulator set back to the start (SetStrategy) for each episode: the part of IterativeStep the
//     simulator itself needs. Allocation counters as IterativeStep's; retimed = tasks re-simulated per step (mean),
//     tasks = the task count at the episode's end; from each step's wall time, step_p50_us / step_p90_us (median
//     and 90th percentile) and slow_half_share (the share of the episode's time spent in its slower half of steps).
//   FullResimStep/<ops>: the same episodes' moves re-simulated from scratch with Simulator::Run (what an environment
//     without delta simulation would pay per step, OOM included).
//   IterativeVsFull/<ops>: IterativeStep and FullResimStep paired, for a ratio that drift in the machine's speed
//     between two benchmarks does not move: each episode's steps in blocks of 512, every block made with
//     ApplyAction and then the same 512 placements re-simulated with Simulator::Run (thread CPU time of each),
//     and the two step times compared after each block. delta_step_us / full_step_us: mean per step; ratio: full
//     over delta over all episodes (the target's figure); ratio_min / ratio_max: over the episodes (one per
//     iteration). Each block's first steps find their data evicted by the full runs, which IterativeStep's do
//     not (three episodes each, minutes apart: blocks of 64 gave nmt 3.38-3.69x and transformer 8.45-8.68x,
//     blocks of 512 3.78-4.10x and 8.83-9.76x).
//   IterativeStep/transformer/<ops>, DeltaStepTimeOnly/transformer/<ops>, FullResimStep/transformer/<ops>,
//     IterativeVsFull/transformer/<ops>: the same four on "transformer" family graphs.
//   IterativeShape/<family>/<ops>: the shape of the same episodes' steps (bench/delta_shape.h, as sim_bench's
//     DeltaShape): each step's placement simulated in full before and after, means per step of the tasks moved,
//     the binding-forest subtrees and per-resource runs they form, the slacks to prove, the order breaks, and how
//     much of the dequeue order of all resources together holds (order_descents, order_inversions,
//     keeping_queues_share).
//     One episode per run (about a minute at 10k ops).
//   OneShotEpisode/<ops>: a whole one-shot (GDP) episode: NewInitialState + ApplyPlacement of a random placement
//     (num_groups checked steps and one full simulation). items = episodes.
//   Observation/<ops>: PlacementState::FillObservation into a reused Observation.
//   BatchStepping/<envs>: EnvBatch::Step over 4 one-shot nmt games of about 1k ops (8 GPUs); items = env steps.
//   SplitEvaluate/<ops>: PlacementGame::Evaluate of a one-shot SOAP game's uniform split over all 8 GPUs along the
//     sample dimension (UniformPlacement of candidate 0): the terminal simulation of a placement that partitions
//     every group, as a one-shot episode of a SOAP policy ends with. items = evaluations.
//   GameCreate/<ops>/<soap>: PlacementGame::Create of a one-shot game (reference simulations, estimates and, with
//     soap = 1, the SOAP candidates' tables and features: 12 candidates on the DGX-1); the graph is built once.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "bench/delta_shape.h"
#include "bench/thread_cpu_clock.h"
#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "env/batch.h"
#include "env/game.h"
#include "sim/simulator.h"
#include "tests/testing/allocation_count.h"

namespace devplace {
namespace {

template <class T>
T Check(Expected<T> e) {
  if (!e) throw std::runtime_error(e.error().message);
  return std::move(e).value();
}

std::shared_ptr<const Topology> Dgx1() {
  static const std::shared_ptr<const Topology> topo = std::make_shared<const Topology>(
      Check(ReadTopologyFile(std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/dgx1-v100.yaml")));
  return topo;
}

std::shared_ptr<const PlacementGame> Game(int32_t ops, MdpKind kind, uint64_t seed = 42, bool mask = true,
                                          const char* family = "nmt") {
  FamilyOptions options;
  options.target_ops = ops;
  auto graph = std::make_shared<const Graph>(Check(GenerateFamilyMember(family, seed, options)));
  EnvConfig config;
  config.kind = kind;
  config.memory_aware_mask = mask;
  return Check(PlacementGame::Create(graph, Dgx1(), CostModel(), config));
}

int32_t RandomLegal(const PlacementState& state, std::mt19937_64& rng) {
  const std::vector<uint8_t>& mask = state.LegalActionsMask();
  for (;;) {
    const int32_t d = static_cast<int32_t>(rng() % mask.size());
    if (mask[d]) return d;
  }
}

// Items and the mean CPU time per step of benchmarks that run `steps` steps in all.
void CountSteps(benchmark::State& st, int64_t steps) {
  st.SetItemsProcessed(steps);
  st.counters["per_step"] =
      benchmark::Counter(static_cast<double>(steps), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// Allocations per step of the step benchmarks' episodes: in the first episode of a run (a simulator growing its
// lists) and in the later ones (allocs_first_episode, allocs_per_step).
struct StepAllocations {
  int64_t first = 0, first_steps = 0, later = 0, later_steps = 0;
  void Add(int64_t allocs, int64_t steps) {
    (first_steps == 0 ? first : later) += allocs;
    (first_steps == 0 ? first_steps : later_steps) += steps;
  }
  void Report(benchmark::State& st) const {
    auto per = [](int64_t a, int64_t n) { return n > 0 ? static_cast<double>(a) / static_cast<double>(n) : 0.0; };
    st.counters["allocs_first_episode"] = per(first, first_steps);
    st.counters["allocs_per_step"] = per(later, later_steps);
  }
};

void IterativeStepOf(benchmark::State& st, const char* family) {
  auto game = Game(static_cast<int32_t>(st.range(0)), MdpKind::kIterative, 42, false, family);
  std::mt19937_64 rng(1);
  int64_t steps = 0;
  StepAllocations allocs;
  for (auto _ : st) {
    st.PauseTiming();
    PlacementState state = game->NewInitialState(0);
    st.ResumeTiming();
    const int64_t before = testing::ThreadAllocations(), steps_before = steps;
    while (!state.IsTerminal()) {
      const int32_t d = static_cast<int32_t>(rng() % game->num_devices());
      if (!state.ApplyAction(d).ok()) throw std::runtime_error("illegal action");
      ++steps;
    }
    allocs.Add(testing::ThreadAllocations() - before, steps - steps_before);
  }
  CountSteps(st, steps);
  allocs.Report(st);
  st.counters["groups"] = game->num_groups();
  st.counters["ops"] = game->graph().num_ops();
}

void DeltaStepTimeOnlyOf(benchmark::State& st, const char* family) {
  auto game = Game(static_cast<int32_t>(st.range(0)), MdpKind::kIterative, 42, false, family);
  std::mt19937_64 rng(1);
  const int32_t groups = game->num_groups();
  const Strategy single = game->StrategyFromGroups(std::vector<int32_t>(groups, game->reference_device()));
  std::vector<std::pair<OpId, OpConfig>> changes;
  std::vector<double> step_us;  // each step's wall time
  double sink = 0, retimed = 0;
  int64_t steps = 0, tasks = 0;
  StepAllocations allocs;
  DeltaSimulator delta =
      Check(DeltaSimulator::Create(game->graph(), game->topology(), single, game->cost(), game->config().sim));
  for (auto _ : st) {
    st.PauseTiming();
    if (!delta.SetStrategy(single).ok()) throw std::runtime_error("reset failed");
    st.ResumeTiming();
    int64_t episode_allocs = 0;
    for (int32_t g = 0; g < groups; ++g, ++steps) {
      const int32_t d = static_cast<int32_t>(rng() % game->num_devices());
      const auto started = std::chrono::steady_clock::now();
      changes.clear();
      for (OpId op : game->groups().members[g]) changes.emplace_back(op, OpConfig{{d}, {}});
      const int64_t before = testing::ThreadAllocations();
      if (!delta.SetConfigs(changes).ok()) throw std::runtime_error("delta failed");
      sink += delta.step_time();
      episode_allocs += testing::ThreadAllocations() - before;
      step_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count());
      retimed += static_cast<double>(delta.last_retimed_tasks());
    }
    allocs.Add(episode_allocs, groups);
    st.PauseTiming();
    tasks = delta.result().num_tasks;
    st.ResumeTiming();
  }
  benchmark::DoNotOptimize(sink);
  CountSteps(st, steps);
  allocs.Report(st);
  st.counters["retimed"] = steps > 0 ? retimed / static_cast<double>(steps) : 0.0;
  st.counters["tasks"] = tasks;
  if (step_us.empty()) return;
  std::sort(step_us.begin(), step_us.end());
  const size_t n = step_us.size();
  const double total = std::accumulate(step_us.begin(), step_us.end(), 0.0);
  st.counters["step_p50_us"] = step_us[n / 2];
  st.counters["step_p90_us"] = step_us[n * 9 / 10];
  st.counters["slow_half_share"] = total > 0 ? std::accumulate(step_us.begin() + n / 2, step_us.end(), 0.0) / total : 0;
}

// The penalised step time of `strategy` with group g moved to device d (moved in `strategy`), simulated from
// scratch: a step of an environment without delta simulation.
double FullResim(const PlacementGame& game, Simulator& sim, Strategy* strategy, int32_t g, int32_t d) {
  for (OpId op : game.groups().members[g]) strategy->configs[op].devices[0] = d;
  SimResult r = Check(sim.Run(*strategy));
  return game.PenalisedTime(CostOf(r, game.topology()));
}

void FullResimStepOf(benchmark::State& st, const char* family) {
  auto game = Game(static_cast<int32_t>(st.range(0)), MdpKind::kIterative, 42, false, family);
  std::mt19937_64 rng(1);
  const int32_t groups = game->num_groups();
  const Strategy single = game->StrategyFromGroups(std::vector<int32_t>(groups, game->reference_device()));
  Simulator sim = Check(Simulator::Create(game->graph(), game->topology(), game->cost(), game->config().sim));
  double sink = 0;
  int64_t steps = 0;
  for (auto _ : st) {
    Strategy strategy = single;  // (a copy; negligible next to an episode of full simulations)
    for (int32_t g = 0; g < groups; ++g, ++steps)
      sink += FullResim(*game, sim, &strategy, g, static_cast<int32_t>(rng() % game->num_devices()));
  }
  benchmark::DoNotOptimize(sink);
  CountSteps(st, steps);
}

void IterativeVsFullOf(benchmark::State& st, const char* family) {
  constexpr int32_t kBlock = 512;  // steps (about 40 ms of delta and 350 ms of full steps for transformer 10k)
  using bench::ThreadCpuClock;
  auto game = Game(static_cast<int32_t>(st.range(0)), MdpKind::kIterative, 42, false, family);
  std::mt19937_64 rng(1);
  const int32_t groups = game->num_groups();
  const Strategy single = game->StrategyFromGroups(std::vector<int32_t>(groups, game->reference_device()));
  Simulator sim = Check(Simulator::Create(game->graph(), game->topology(), game->cost(), game->config().sim));
  std::vector<int32_t> block;
  double sink = 0, delta_s = 0, full_s = 0, ratio_min = 0, ratio_max = 0;
  int64_t steps = 0, episodes = 0;
  for (auto _ : st) {
    st.PauseTiming();
    PlacementState state = game->NewInitialState(0);
    Strategy strategy = single;
    st.ResumeTiming();
    double episode_delta = 0, episode_full = 0;
    for (int32_t g = 0; g < groups;) {
      block.clear();
      const double t0 = ThreadCpuClock::now();
      for (int32_t k = 0; k < kBlock && g + k < groups; ++k) {
        const int32_t d = static_cast<int32_t>(rng() % game->num_devices());
        if (!state.ApplyAction(d).ok()) throw std::runtime_error("illegal action");
        block.push_back(d);
      }
      const double t1 = ThreadCpuClock::now();
      double full_time = 0;
      for (int32_t d : block) full_time = FullResim(*game, sim, &strategy, g++, d);
      const double t2 = ThreadCpuClock::now();
      // Both paths simulate the same placement (the delta simulator's results equal the full simulation's).
      if (state.penalised_time() != full_time) throw std::runtime_error("delta and full step times differ");
      sink += full_time;
      episode_delta += t1 - t0;
      episode_full += t2 - t1;
    }
    if (!state.IsTerminal()) throw std::runtime_error("the episode did not end after every group");
    steps += groups;
    delta_s += episode_delta;
    full_s += episode_full;
    const double ratio = episode_full / episode_delta;
    ratio_min = episodes++ == 0 || ratio < ratio_min ? ratio : ratio_min;
    ratio_max = std::max(ratio_max, ratio);
  }
  benchmark::DoNotOptimize(sink);
  CountSteps(st, steps);
  const double n = static_cast<double>(std::max<int64_t>(steps, 1));
  st.counters["delta_step_us"] = delta_s / n * 1e6;
  st.counters["full_step_us"] = full_s / n * 1e6;
  st.counters["ratio"] = delta_s > 0 ? full_s / delta_s : 0;
  st.counters["ratio_min"] = ratio_min;
  st.counters["ratio_max"] = ratio_max;
}

void OneShotEpisode(benchmark::State& st) {
  auto game = Game(static_cast<int32_t>(st.range(0)), MdpKind::kOneShot);
  std::mt19937_64 rng(1);
  std::vector<int32_t> placement(game->num_groups());
  uint64_t seed = 0;
  for (auto _ : st) {
    st.PauseTiming();
    for (int32_t& d : placement) d = static_cast<int32_t>(rng() % game->num_devices());
    st.ResumeTiming();
    PlacementState state = game->NewInitialState(seed++);
    // A random placement may break the memory mask; fall back to stepping with legal actions then.
    if (!state.ApplyPlacement(placement).ok())
      while (!state.IsTerminal()) (void)state.ApplyAction(RandomLegal(state, rng));
    benchmark::DoNotOptimize(state.Return());
  }
  st.SetItemsProcessed(st.iterations());
  st.counters["groups"] = game->num_groups();
}

void ObservationFill(benchmark::State& st) {
  auto game = Game(static_cast<int32_t>(st.range(0)), MdpKind::kOneShot);
  PlacementState state = game->NewInitialState(0);
  Observation obs;
  for (auto _ : st) {
    state.FillObservation(&obs);
    benchmark::DoNotOptimize(obs.node_features.data());
  }
  st.SetItemsProcessed(st.iterations());
}

void BatchStepping(benchmark::State& st) {
  std::vector<std::shared_ptr<const PlacementGame>> games;
  for (uint64_t s = 0; s < 4; ++s) games.push_back(Game(1000, MdpKind::kOneShot, 42 + s));
  EnvBatch batch = Check(EnvBatch::Create(games, static_cast<int32_t>(st.range(0)), 7));
  std::mt19937_64 rng(1);
  std::vector<int32_t> actions(batch.num_envs());
  BatchStep out;
  for (auto _ : st) {
    for (int32_t i = 0; i < batch.num_envs(); ++i) actions[i] = RandomLegal(batch.state(i), rng);
    if (!batch.Step(actions, &out).ok()) throw std::runtime_error("batch step failed");
  }
  st.SetItemsProcessed(st.iterations() * batch.num_envs());
}

// The nmt family member of about `ops` ops (seed 42) and a one-shot game config with `action_space`.
std::shared_ptr<const Graph> NmtGraph(int64_t ops) {
  FamilyOptions options;
  options.target_ops = static_cast<int32_t>(ops);
  return std::make_shared<const Graph>(Check(GenerateFamilyMember("nmt", 42, options)));
}
EnvConfig OneShot(ActionSpace action_space) {
  EnvConfig config;
  config.kind = MdpKind::kOneShot;
  config.action_space = action_space;
  return config;
}

void SplitEvaluate(benchmark::State& st) {
  const std::shared_ptr<const PlacementGame> game =
      Check(PlacementGame::Create(NmtGraph(st.range(0)), Dgx1(), CostModel(), OneShot(ActionSpace::kSoap)));
  if (game->candidate(0).name != "all/sample") throw std::runtime_error("candidate 0 is not all/sample");
  const std::vector<int32_t> placement = game->UniformPlacement(0);
  for (auto _ : st) benchmark::DoNotOptimize(Check(game->Evaluate(placement)).step_time);
  st.SetItemsProcessed(st.iterations());
}

void GameCreate(benchmark::State& st) {
  const std::shared_ptr<const Graph> graph = NmtGraph(st.range(0));
  const EnvConfig config = OneShot(st.range(1) != 0 ? ActionSpace::kSoap : ActionSpace::kDevices);
  for (auto _ : st) benchmark::DoNotOptimize(Check(PlacementGame::Create(graph, Dgx1(), CostModel(), config)).get());
  st.SetItemsProcessed(st.iterations());
}

void IterativeShapeOf(benchmark::State& st, const char* family) {
  auto game = Game(static_cast<int32_t>(st.range(0)), MdpKind::kIterative, 42, false, family);
  std::mt19937_64 rng(1);
  const int32_t groups = game->num_groups();
  const SimOptions options = game->config().sim;
  const CostModel cost = game->cost();
  bench::FullScheduler scheduler(game->graph(), game->topology(), cost, options);
  auto schedule = [&](const std::vector<int32_t>& devices) { return scheduler.Run(game->StrategyFromGroups(devices)); };
  bench::ShapeCounts shape;
  for (auto _ : st) {
    std::vector<int32_t> devices(static_cast<size_t>(groups), game->reference_device());
    sim::FullRun before = schedule(devices);
    for (int32_t g = 0; g < groups; ++g) {
      devices[g] = static_cast<int32_t>(rng() % game->num_devices());
      sim::FullRun after = schedule(devices);
      shape.Add(before, after);
      before = std::move(after);
    }
  }
  shape.Report(st);
}

// The step benchmarks: nmt under the plain names, transformer as <name>/transformer/<ops>.
[[maybe_unused]] const bool kStepBenchmarks = [] {
  using Step = void (*)(benchmark::State&, const char*);
  for (const auto& [name, step] : {std::pair<const char*, Step>{"IterativeStep", IterativeStepOf},
                                   {"DeltaStepTimeOnly", DeltaStepTimeOnlyOf},
                                   {"FullResimStep", FullResimStepOf},
                                   {"IterativeVsFull", IterativeVsFullOf}})
    for (const char* family : {"nmt", "transformer"}) {
      std::string label = name;
      if (std::string_view(family) != "nmt") label.append("/").append(family);
      benchmark::RegisterBenchmark(label.c_str(), step, family)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
    }
  for (const char* family : {"nmt", "transformer"})
    benchmark::RegisterBenchmark((std::string("IterativeShape/") + family).c_str(), IterativeShapeOf, family)
        ->Arg(1000)
        ->Arg(10000)
        ->Iterations(1)
        ->Unit(benchmark::kSecond);
  return true;
}();
BENCHMARK(OneShotEpisode)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(ObservationFill)->Arg(1000)->Arg(10000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BatchStepping)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(SplitEvaluate)->Arg(10000)->Arg(50000)->Unit(benchmark::kMillisecond);
BENCHMARK(GameCreate)->Args({10000, 0})->Args({10000, 1})->Args({50000, 0})->Args({50000, 1})->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace devplace

BENCHMARK_MAIN();
