#include "agents/pipeline_dp.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "agents/search_budget.h"
#include "core/colocation.h"
#include "core/device_order.h"
#include "core/sharding_propagation.h"
#include "core/strategy.h"
#include "sim/pipeline.h"
#include "sim/simulator.h"

namespace devplace {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The graph's forward layers as pipeline units: every op's unit (forward ops by their layer, the others by their
// forward op's) and each unit's FLOPs.
struct Units {
  std::vector<std::string> layers;
  std::vector<int32_t> of_op;
  std::vector<double> flops;
  int32_t size() const { return static_cast<int32_t>(layers.size()); }
};

Expected<Units> MakeUnits(const Graph& graph) {
  Units u;
  u.layers = ForwardLayerOrder(graph);
  std::unordered_map<std::string, int32_t> index;
  for (int32_t i = 0; i < u.size(); ++i) index.emplace(u.layers[i], i);
  u.of_op.assign(static_cast<size_t>(graph.num_ops()), -1);
  u.flops.assign(u.layers.size(), 0.0);
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    const Op& o = graph.op(op);
    const OpId forward = o.role == OpRole::kForward ? op : (o.forward_op.empty() ? -1 : graph.find(o.forward_op));
    if (forward < 0 || graph.op(forward).role != OpRole::kForward)
      return Error{"op '" + o.name + "': a " + std::string(ToString(o.role)) +
                   " op without its forward op (forward_op) cannot be placed in a pipeline stage"};
    u.of_op[op] = index.at(graph.op(forward).layer);
    u.flops[u.of_op[op]] += o.flops;
  }
  return u;
}

// legal[p] (0 <= p <= n): whether stages cut between unit p - 1 and unit p follow the data flow (AssignStages' rule:
// forward ops feed their own or later stages, backward ops their own or earlier stages' backward and update ops).
std::vector<char> LegalCuts(const Graph& graph, const Units& u) {
  const int32_t n = u.size();
  std::vector<int32_t> diff(static_cast<size_t>(n) + 2, 0);
  auto forbid = [&](int32_t lo, int32_t hi) {  // the cuts p with lo < p <= hi
    if (lo >= hi) return;
    ++diff[lo + 1];
    --diff[hi + 1];
  };
  for (const Edge& e : graph.edges()) {
    const int32_t a = u.of_op[e.src], b = u.of_op[e.dst];
    if (graph.op(e.src).role == OpRole::kForward) forbid(b, a);
    else if (graph.op(e.dst).role == OpRole::kForward) forbid(std::min(a, b), std::max(a, b));
    else forbid(a, b);
  }
  std::vector<char> legal(static_cast<size_t>(n) + 1, 1);
  for (int32_t p = 0, count = 0; p <= n; ++p) legal[p] = (count += diff[p]) == 0;
  return legal;
}

// Cluster bounds (unit indices from 0 to n): the k-th legal cut taken where the units before it reach k / max of
// the FLOPs, at most `max` clusters.
std::vector<int32_t> ClusterBounds(const Units& u, const std::vector<char>& legal, int32_t max) {
  const double total = std::accumulate(u.flops.begin(), u.flops.end(), 0.0);
  std::vector<int32_t> bounds = {0};
  double before = 0.0;
  for (int32_t p = 1; p < u.size(); ++p) {
    before += u.flops[p - 1];
    const double due = total * static_cast<double>(bounds.size()) / max;
    if (legal[p] && before >= due && static_cast<int32_t>(bounds.size()) < max) bounds.push_back(p);
  }
  bounds.push_back(u.size());
  return bounds;
}

// The machine as pipeline-dp sees it: devices in host order, the host size and the submesh sizes (powers of two
// dividing the host size, then 1..H whole hosts), and per size the first that many devices of the host order in
// FastRingOrder (the submesh stages are priced on; a stage's rings run over fast links, as NCCL's do).
struct Machine {
  std::vector<DeviceId> order;
  int32_t per_host = 0;
  std::vector<int32_t> sizes;
  std::vector<std::vector<DeviceId>> leading;
};

Expected<Machine> MachineOf(const Topology& topology) {
  std::vector<std::pair<std::string, std::vector<DeviceId>>> hosts;
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    const std::string& host = topology.device(d).host;
    auto it = std::find_if(hosts.begin(), hosts.end(), [&](const auto& h) { return h.first == host; });
    if (it == hosts.end()) it = hosts.insert(hosts.end(), {host, {}});
    it->second.push_back(d);
  }
  Machine m;
  m.per_host = static_cast<int32_t>(hosts[0].second.size());
  for (const auto& [name, devices] : hosts) {
    if (static_cast<int32_t>(devices.size()) != m.per_host)
      return Error{"hosts of different sizes ('" + hosts[0].first + "' has " + std::to_string(m.per_host) +
                   " devices, '" + name + "' " + std::to_string(devices.size()) +
                   "): submeshes are whole hosts or a share of one"};
    m.order.insert(m.order.end(), devices.begin(), devices.end());
  }
  for (int32_t p = 1; p < m.per_host; p *= 2)
    if (m.per_host % p == 0) m.sizes.push_back(p);
  for (int32_t h = 1; h <= static_cast<int32_t>(hosts.size()); ++h) m.sizes.push_back(h * m.per_host);
  for (int32_t k : m.sizes) m.leading.push_back(FastRingOrder(topology, {m.order.begin(), m.order.begin() + k}));
  return m;
}

// A 1-D mesh named "model" over `devices` (Megatron's tensor-parallel axis).
Mesh ModelMesh(const std::vector<DeviceId>& devices) {
  return Mesh{"stage", {static_cast<int64_t>(devices.size())}, {"model"}, devices};
}

// Every colocation group of `graph` split along its samples over `devices` when all its ops can be (SplitConfig),
// else whole on devices[0].
Strategy DataParallelOn(const Graph& graph, const std::vector<DeviceId>& devices) {
  Strategy strategy = Strategy::AllOn(graph.num_ops(), devices[0]);
  for (const std::vector<OpId>& members : ColocationGroups(graph).members) {
    std::vector<OpConfig> split;
    for (OpId op : members)
      if (std::optional<OpConfig> c = SplitConfig(graph.op(op), devices)) split.push_back(std::move(*c));
    if (split.size() == members.size())
      for (size_t k = 0; k < members.size(); ++k) strategy.configs[members[k]] = std::move(split[k]);
  }
  return strategy;
}

// Megatron-LM's annotations (configs/sharding/megatron.yaml) propagated over `graph` on `mesh`; nullopt when the
// graph has no such ops or they do not fit.
// Those of Megatron-LM's annotations (configs/sharding/megatron.yaml, on mesh axis 0) that match a forward op of
// `graph` among `ops` (all ops when empty): a pipeline stage's PipelineStage::sharding.
std::vector<ShardingAnnotation> MegatronAnnotations(const Graph& graph, const std::vector<OpId>& ops = {}) {
  std::vector<ShardingAnnotation> annotations;
  for (const char* pattern : {"*/attention_q", "*/attention_k", "*/attention_v", "*/ffn1"}) {
    bool matched = ops.empty();
    for (OpId op : ops)
      matched = matched || (graph.op(op).role == OpRole::kForward && GlobMatch(pattern, graph.op(op).name));
    if (matched) annotations.push_back({pattern, ShardingSpec{{{}, {}, {0}}, {}}, false, "pipeline-dp megatron"});
  }
  return annotations;
}

std::optional<std::vector<ShardingSpec>> MegatronSpecs(const Graph& graph, const Mesh& mesh) {
  Expected<ShardingPlan> plan = PropagateSharding(graph, mesh, MegatronAnnotations(graph));
  if (!plan.ok()) return std::nullopt;
  return std::move(plan->specs);
}

enum Candidate : int8_t { kDataParallel = 0, kMegatron = 1 };

// One priced candidate of a (cluster range, submesh size) cell: its time per micro-batch and, per device of the
// submesh (the machine's first devices of that size), the static bytes and the rest of the whole-batch simulated
// peak (activations of all M micro-batches and transfer buffers), with the device's capacity.
struct Option {
  double seconds = kInfinity;
  Candidate candidate = kDataParallel;
  std::vector<int64_t> fixed, dynamic, capacity;

  // The overage (sim/objective.h) of the stage with `in_flight` of the M micro-batches' activations alive: per
  // device static + dynamic x in_flight / M above its capacity, summed as fractions of the capacity.
  double Overage(int32_t in_flight, int32_t microbatches) const {
    double overage = 0.0;
    for (size_t j = 0; j < fixed.size(); ++j) {
      const double peak = static_cast<double>(fixed[j]) +
                          static_cast<double>(dynamic[j]) * in_flight / static_cast<double>(microbatches);
      if (capacity[j] > 0 && peak > static_cast<double>(capacity[j]))
        overage += (peak - static_cast<double>(capacity[j])) / static_cast<double>(capacity[j]);
    }
    return overage;
  }
};

// The priced candidates of a cell (none: not priced, or no candidate simulated).
struct Price {
  std::vector<Option> options;
};

// Prices stages with the simulator: units [lo, hi) as a graph of their own on the machine's submesh of size index
// `size` (Machine::leading).
class StagePricer {
 public:
  StagePricer(const SearchProblem& problem, const Units& units, const Machine& machine, int32_t microbatches,
              BudgetTracker* clock)
      : problem_(problem), units_(units), machine_(machine), microbatches_(microbatches), clock_(*clock) {}

  Price Run(int32_t lo, int32_t hi, int32_t size) {
    Price best;
    const Graph& graph = *problem_.graph;
    GraphBuilder b(graph.name() + "-stage");
    std::vector<OpId> id(static_cast<size_t>(graph.num_ops()), -1), ops;
    for (OpId op = 0; op < graph.num_ops(); ++op)
      if (units_.of_op[op] >= lo && units_.of_op[op] < hi) {
        id[op] = b.add_op(graph.op(op));
        ops.push_back(op);
      }
    for (const Edge& e : graph.edges())
      if (id[e.src] >= 0 && id[e.dst] >= 0) b.add_edge(id[e.src], id[e.dst], e.bytes);
    Expected<Graph> stage = std::move(b).Build();
    if (!stage.ok()) return best;
    const std::vector<DeviceId>& devices = machine_.leading[size];
    const int32_t k = machine_.sizes[size];
    Consider(*stage, DataParallelOn(*stage, devices), kDataParallel, &best);
    // Megatron as the pipeline simulates a stage with its annotations (ShardedStageGraph): propagated over the
    // stage's ops, when some match and the micro-batches divide every sample dimension.
    bool divisible = true;
    for (OpId op : ops)
      for (const PartitionDim& dim : graph.op(op).dims)
        divisible = divisible && (dim.kind != DimKind::kSample || dim.size % microbatches_ == 0);
    const std::vector<ShardingAnnotation> megatron = MegatronAnnotations(graph, ops);
    if (k > 1 && divisible && !megatron.empty())
      if (Expected<ShardingPlan> p = PropagateSharding(*stage, ModelMesh(devices), megatron); p.ok())
        if (Expected<Strategy> s = LowerSpecs(*stage, p->specs, ModelMesh(devices)); s.ok())
          Consider(*stage, *s, kMegatron, &best);
    return best;
  }

  double best_step() const { return best_step_; }

 private:
  void Consider(const Graph& stage, const Strategy& strategy, Candidate candidate, Price* price) {
    if (clock_.exhausted()) return;
    Expected<SimResult> sim = Simulate(stage, *problem_.topology, strategy, problem_.cost, problem_.sim);
    if (sim.ok()) best_step_ = std::min(best_step_, sim->step_time);
    clock_.RecordEvaluation(best_step_ < kInfinity ? best_step_ : 0.0);
    if (!sim.ok()) return;
    Option option{sim->step_time / microbatches_, candidate, {}, {}, {}};
    for (DeviceId d : DevicesOf(strategy)) {
      const DeviceStats& stats = sim->devices[d];
      option.fixed.push_back(stats.static_bytes);
      option.dynamic.push_back(stats.peak_bytes - stats.static_bytes);
      option.capacity.push_back(problem_.topology->device(d).memory_bytes);
    }
    price->options.push_back(std::move(option));
  }

  // The devices some op of `strategy` runs on, ascending.
  static std::vector<DeviceId> DevicesOf(const Strategy& strategy) {
    std::vector<DeviceId> devices;
    for (const OpConfig& c : strategy.configs) devices.insert(devices.end(), c.devices.begin(), c.devices.end());
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    return devices;
  }

  const SearchProblem& problem_;
  const Units& units_;
  const Machine& machine_;
  const int32_t microbatches_;
  BudgetTracker& clock_;
  double best_step_ = kInfinity;
};

// One stage of the DP's answer: clusters [first, last) on a submesh of machine size index `size`, with the cell's
// candidate `option` (an index into its Price::options).
struct StageChoice {
  int32_t first = 0, last = 0, size = 0, option = 0;
};

using Cell = StageChoice;

// A cover the DP can always fall back on, priced before the other cells: the largest submesh size that fits the
// batch and divides the devices into at most C stages, the clusters cut into that many contiguous groups of similar
// FLOPs. Empty when no size does.
std::vector<Cell> SeedCover(const std::vector<double>& cluster_flops, const Machine& machine, int32_t microbatches,
                            int64_t batch) {
  const int32_t C = static_cast<int32_t>(cluster_flops.size()), N = static_cast<int32_t>(machine.order.size());
  const double total = std::accumulate(cluster_flops.begin(), cluster_flops.end(), 0.0);
  for (int32_t s = static_cast<int32_t>(machine.sizes.size()) - 1; s >= 0; --s) {
    const int32_t size = machine.sizes[s], n = N / size;
    if ((batch > 0 && int64_t{microbatches} * size > batch) || N % size != 0 || n > C) continue;
    std::vector<Cell> cover;
    double before = 0.0;
    int32_t first = 0;
    for (int32_t j = 1; j <= C; ++j) {
      before += cluster_flops[j - 1];
      const int32_t k = static_cast<int32_t>(cover.size()) + 1;  // the stage this cut would end
      const bool due = before >= total * k / n || C - j == n - k;
      if (k < n ? due : j == C) {
        cover.push_back({first, j, s});
        first = j;
      }
    }
    return cover;
  }
  return {};
}

// Alpa's DP, memory-aware: for each candidate t_max (the priced stage times, ascending), the contiguous stages with
// times <= t_max covering all clusters and exactly all devices, ranked as the objective ranks steps (sim/objective.h):
// least total overage first (0: every stage fits), then least Σ t. A stage's overage counts the activations its
// position keeps in flight (WarmupForwards of the schedule with r stages from it to the end), so the DP runs from
// the last cluster back, over (first cluster, devices used, stages). The answer minimises (overage,
// Σ t + (M - 1) t_max). `price[(i * C + j - 1) * S + s]` is clusters [i, j) on size index s. Empty when no cover
// exists.
std::vector<StageChoice> SolveStages(const std::vector<Price>& price, int32_t clusters, const Machine& machine,
                                     int32_t microbatches, PipelineSchedule schedule) {
  const int32_t C = clusters, S = static_cast<int32_t>(machine.sizes.size());
  const int32_t N = static_cast<int32_t>(machine.order.size());
  auto at = [&](int32_t i, int32_t j, int32_t s) -> const Price& {
    return price[(static_cast<size_t>(i) * C + j - 1) * S + s];
  };
  std::vector<double> bounds;
  for (const Price& p : price)
    for (const Option& o : p.options)
      if (o.seconds < kInfinity) bounds.push_back(o.seconds);
  std::sort(bounds.begin(), bounds.end());
  bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
  using Cost = std::pair<double, double>;  // (overage, Σ t)
  const Cost none{kInfinity, kInfinity};
  Cost best = none;
  std::vector<StageChoice> answer;
  // g[(i * (N + 1) + d) * (N + 1) + r]: clusters [i, C) on d devices in r stages; back: its first stage.
  auto cell = [&](int32_t i, int32_t d, int32_t r) { return (static_cast<size_t>(i) * (N + 1) + d) * (N + 1) + r; };
  std::vector<Cost> g;
  std::vector<StageChoice> back;
  for (double t_max : bounds) {
    if (best.first == 0.0 && static_cast<double>(microbatches - 1) * t_max >= best.second) break;
    g.assign(cell(C + 1, 0, 0), none);
    back.assign(g.size(), {});
    g[cell(C, 0, 0)] = {0.0, 0.0};
    for (int32_t i = C - 1; i >= 0; --i)
      for (int32_t j = i + 1; j <= C; ++j)
        for (int32_t s = 0; s < S; ++s) {
          const std::vector<Option>& options = at(i, j, s).options;
          const int32_t size = machine.sizes[s];
          for (int32_t r = 0; r < N; ++r) {
            const int32_t in_flight = WarmupForwards(schedule, r + 1, 0, microbatches);
            for (int32_t o = 0; o < static_cast<int32_t>(options.size()); ++o) {
              if (!(options[o].seconds <= t_max)) continue;
              const double overage = options[o].Overage(in_flight, microbatches);
              for (int32_t d = 0; d + size <= N; ++d) {
                const Cost& after = g[cell(j, d, r)];
                if (after.first == kInfinity) continue;
                const Cost here{after.first + overage, after.second + options[o].seconds};
                if (here < g[cell(i, d + size, r + 1)]) {
                  g[cell(i, d + size, r + 1)] = here;
                  back[cell(i, d + size, r + 1)] = {i, j, s, o};
                }
              }
            }
          }
        }
    int32_t stages = -1;
    Cost total = none;
    for (int32_t r = 1; r <= N; ++r) {
      const Cost& c = g[cell(0, N, r)];
      const Cost here{c.first, c.second + static_cast<double>(microbatches - 1) * t_max};
      if (c.first < kInfinity && here < total) {
        total = here;
        stages = r;
      }
    }
    if (stages < 0 || !(total < best)) continue;
    best = total;
    answer.clear();
    for (int32_t i = 0, d = N, r = stages; r > 0; --r) {
      const StageChoice c = back[cell(i, d, r)];
      answer.push_back(c);
      d -= machine.sizes[c.size];
      i = c.last;
    }
  }
  return answer;
}

// The stages' devices: the largest stages first, each on the next devices of the machine's host order (sizes divide
// the host size or are whole hosts, so a stage never straddles a host it does not fill), in FastRingOrder.
std::vector<std::vector<DeviceId>> PackStages(const std::vector<StageChoice>& stages, const Machine& machine,
                                              const Topology& topology) {
  std::vector<size_t> order(stages.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return machine.sizes[stages[a].size] > machine.sizes[stages[b].size]; });
  std::vector<std::vector<DeviceId>> devices(stages.size());
  size_t next = 0;
  for (size_t s : order) {
    const size_t k = static_cast<size_t>(machine.sizes[stages[s].size]);
    devices[s] = FastRingOrder(topology, {machine.order.begin() + next, machine.order.begin() + next + k});
    next += k;
  }
  return devices;
}

// The plan's per-op form (PipelineDpSearch's contract).
Strategy LowerPlan(const Graph& graph, const PipelinePlan& plan, const std::vector<int32_t>& stage_of) {
  Strategy strategy = Strategy::AllOn(graph.num_ops(), plan.stages[0].devices[0]);
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const std::vector<DeviceId>& devices = plan.stages[s].devices;
    Strategy stage = DataParallelOn(graph, devices);
    if (!plan.stages[s].sharding.empty())
      if (std::optional<std::vector<ShardingSpec>> specs = MegatronSpecs(graph, ModelMesh(devices)))
        if (Expected<Strategy> lowered = LowerSpecs(graph, *specs, ModelMesh(devices)); lowered.ok())
          stage = std::move(*lowered);
    for (OpId op = 0; op < graph.num_ops(); ++op)
      if (stage_of[op] == static_cast<int32_t>(s)) strategy.configs[op] = stage.configs[op];
  }
  for (const std::vector<OpId>& members : ColocationGroups(graph).members) {
    int32_t first = stage_of[members[0]];
    bool split = false;
    for (OpId op : members) {
      split = split || stage_of[op] != stage_of[members[0]];
      first = std::min(first, stage_of[op]);
    }
    if (split)
      for (OpId op : members) strategy.configs[op] = OpConfig{{plan.stages[first].devices[0]}, {}};
  }
  return strategy;
}

}  // namespace

Expected<SearchResult> PipelineDpSearch::DoSearch(const SearchProblem& problem, const SearchRequest& request) const {
  BudgetTracker clock(request);
  const Graph& graph = *problem.graph;
  const int32_t M = options_.microbatches;
  if (M < 1 || M > kMaxMicrobatches || options_.max_clusters < 1)
    return Error{"pipeline-dp: microbatches must be in [1, " + std::to_string(kMaxMicrobatches) +
                 "] and max_clusters >= 1"};
  Expected<Units> units = MakeUnits(graph);
  if (!units.ok()) return Error{"pipeline-dp: " + units.error().message};
  Expected<Machine> machine = MachineOf(*problem.topology);
  if (!machine.ok()) return Error{"pipeline-dp: " + machine.error().message};
  const std::vector<int32_t> bounds = ClusterBounds(*units, LegalCuts(graph, *units), options_.max_clusters);
  const int32_t C = static_cast<int32_t>(bounds.size()) - 1, S = static_cast<int32_t>(machine->sizes.size());
  int64_t batch = 0;
  for (const Op& o : graph.ops())
    for (const PartitionDim& dim : o.dims)
      if (dim.kind == DimKind::kSample) batch = std::max(batch, dim.size);
  // Every cell that fits the batch (ValidatePipelinePlan's rule), the seed cover's first (with one stage over
  // every device, the one stage a budget of one evaluation prices).
  StagePricer pricer(problem, *units, *machine, M, &clock);
  std::vector<Price> price(static_cast<size_t>(C) * C * S);
  std::vector<double> cluster_flops;
  for (int32_t c = 0; c < C; ++c)
    cluster_flops.push_back(
        std::accumulate(units->flops.begin() + bounds[c], units->flops.begin() + bounds[c + 1], 0.0));
  std::vector<Cell> cells = SeedCover(cluster_flops, *machine, M, batch);
  for (int32_t i = 0; i < C; ++i)
    for (int32_t j = i + 1; j <= C; ++j)
      for (int32_t s = 0; s < S; ++s) cells.push_back({i, j, s});
  std::vector<char> priced(price.size(), 0);
  for (const Cell& c : cells) {
    const size_t x = (static_cast<size_t>(c.first) * C + c.last - 1) * S + c.size;
    if (clock.exhausted()) break;
    if (priced[x]++ || (batch > 0 && int64_t{M} * machine->sizes[c.size] > batch)) continue;
    price[x] = pricer.Run(bounds[c.first], bounds[c.last], c.size);
  }
  const std::vector<StageChoice> stages = SolveStages(price, C, *machine, M, options_.schedule);
  if (stages.empty())
    return Error{"pipeline-dp: no pipeline of " + std::to_string(M) + " micro-batches covers the " +
                 std::to_string(machine->order.size()) + " devices with stages that fit the batch (" +
                 std::to_string(batch) + ") within the budget"};
  PipelinePlan plan;
  plan.microbatches = M;
  plan.schedule = options_.schedule;
  const std::vector<std::vector<DeviceId>> devices = PackStages(stages, *machine, *problem.topology);
  for (size_t k = 0; k < stages.size(); ++k) {
    const StageChoice& c = stages[k];
    const Option& p = price[(static_cast<size_t>(c.first) * C + c.last - 1) * S + c.size].options[c.option];
    PipelineStage& stage = plan.stages.emplace_back();
    stage.name = "stage" + std::to_string(k);
    stage.ops.kind = StageOps::Kind::kLayerRange;
    stage.ops.first_layer = units->layers[bounds[c.first]];
    stage.ops.last_layer = units->layers[bounds[c.last] - 1];
    stage.devices = devices[k];
    if (p.candidate == kMegatron) {
      stage.spec = "R,R";  // activations replicated over the tensor-parallel axis
      std::vector<OpId> ops;
      for (OpId op = 0; op < graph.num_ops(); ++op)
        if (units->of_op[op] >= bounds[c.first] && units->of_op[op] < bounds[c.last]) ops.push_back(op);
      stage.sharding = MegatronAnnotations(graph, ops);  // simulated with its all-reduces per micro-batch
    }
  }
  Expected<std::vector<int32_t>> stage_of = AssignStages(plan, graph);
  if (!stage_of.ok()) return Error{"pipeline-dp: " + stage_of.error().message};
  if (Status st = ValidatePipelinePlan(plan, graph, *problem.topology); !st)
    return Error{"pipeline-dp: " + st.error().message};
  clock.ReportFinal(pricer.best_step() < kInfinity ? pricer.best_step() : 0.0);
  return SearchResult{LowerPlan(graph, plan, *stage_of), clock.evaluations(), clock.seconds(), std::move(plan)};
}

}  // namespace devplace
