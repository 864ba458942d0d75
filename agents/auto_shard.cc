#include "agents/auto_shard.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include "agents/search_budget.h"
#include "core/mesh.h"
#include "core/sharding_propagation.h"
#include "sim/objective.h"

namespace devplace {
namespace {

enum class Split : uint8_t { kNone, kColumn, kRow };

// The same weight in every layer: forward ops with parameters whose names differ only in their digits, annotated
// together by one glob (the name with each run of digits as '*').
struct WeightGroup {
  std::string pattern;
  int32_t rank = 0;
  int32_t sample_axis = -1;  // output axis of the first sample dimension (-1: none)
  int32_t column_axis = -1;  // output axis of the first parameter dimension (-1: no column split)
  bool row = false;          // a reduction dimension without output axis (a row split, partial over the model axis)
};

// A graph input whose batch a data split annotates.
struct DataInput {
  std::string name;
  int32_t rank = 0;
  int32_t sample_axis = 0;
};

struct State {
  int32_t mesh = 0;
  int32_t data = -1;  // mesh axis of the data split (-1: none)
  int32_t zero = 0;  // ZeRO stage over the data axis: 0 (none), 1 (weight updates sharded) or 3 (weights too)
  std::vector<Split> splits;  // per weight group
};

// What a state ranges over.
struct Space {
  std::vector<Mesh> meshes;
  std::vector<WeightGroup> groups;
  std::vector<DataInput> inputs;
};

bool HasGlobCharacters(const std::string& name) { return name.find_first_of("*?") != std::string::npos; }

std::string DigitsAsStar(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) {
      out += name[i];
    } else if (i == 0 || !std::isdigit(static_cast<unsigned char>(name[i - 1]))) {
      out += '*';
    }
  }
  return out;
}

int32_t FirstOutputAxis(const Op& op, DimKind kind) {
  for (const PartitionDim& d : op.dims)
    if (d.kind == kind && d.output_axis >= 0) return d.output_axis;
  return -1;
}

Space BuildSpace(const Graph& graph, std::vector<Mesh> meshes) {
  Space space{std::move(meshes), {}, {}};
  std::map<std::string, size_t> index;
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    const Op& op = graph.op(o);
    if (op.role != OpRole::kForward || HasGlobCharacters(op.name)) continue;
    const int32_t sample = FirstOutputAxis(op, DimKind::kSample);
    if (graph.in_edges(o).empty() && sample >= 0)
      space.inputs.push_back({op.name, static_cast<int32_t>(op.shape.size()), sample});
    if (op.param_bytes == 0) continue;
    WeightGroup g{DigitsAsStar(op.name), static_cast<int32_t>(op.shape.size()), sample,
                  FirstOutputAxis(op, DimKind::kParameter), false};
    for (const PartitionDim& d : op.dims) g.row = g.row || (d.kind == DimKind::kReduction && d.output_axis < 0);
    if ((g.column_axis < 0 && !g.row) || index.count(g.pattern)) continue;
    index.emplace(g.pattern, space.groups.size());
    space.groups.push_back(std::move(g));
  }
  return space;
}

// The meshes the chain moves between (AutoShardOptions::mesh), laid out by MeshFromShorthand so that every axis's
// rings (the data axis' gradient all-reduce) run over fast links as NCCL's do (a 1-D mesh in FastRingOrder).
Expected<std::vector<Mesh>> CandidateMeshes(const Topology& topology, const std::string& shape) {
  std::vector<std::string> shapes;
  const int32_t n = topology.num_devices();
  if (!shape.empty()) {
    shapes.push_back(shape);
  } else {
    shapes.push_back(std::to_string(n));
    for (int32_t r = 2; r < n; ++r)
      if (n % r == 0 && n / r > 1) shapes.push_back(std::to_string(r) + "x" + std::to_string(n / r));
  }
  std::vector<Mesh> meshes;
  for (const std::string& s : shapes) {
    Expected<Mesh> m = MeshFromShorthand(s, {}, topology);
    if (!m.ok()) return Error{"auto-shard: " + m.error().message};
    if (m->rank() > 2) return Error{"auto-shard: mesh '" + s + "': at most two axes (data and model)"};
    meshes.push_back(std::move(*m));
  }
  return meshes;
}

// The mesh axis weights are split over: the one that is not the data axis (none for a 1-D mesh split over data).
int32_t ModelAxis(const Mesh& mesh, int32_t data) {
  if (mesh.rank() == 1) return data < 0 ? 0 : -1;
  return data < 0 ? 1 : 1 - data;
}

std::vector<ShardingAnnotation> Annotations(const State& state, const Space& space) {
  const Mesh& mesh = space.meshes[state.mesh];
  std::vector<ShardingAnnotation> out;
  if (state.data >= 0)
    for (const DataInput& in : space.inputs) {
      ShardingSpec spec = ShardingSpec::Replicated(in.rank);
      spec.dims[in.sample_axis] = {state.data};
      out.push_back({in.name, std::move(spec), false, "auto-shard: data"});
    }
  const int32_t model = ModelAxis(mesh, state.data);
  for (size_t i = 0; i < space.groups.size() && model >= 0; ++i) {
    const WeightGroup& g = space.groups[i];
    if (state.splits[i] == Split::kNone) continue;
    ShardingSpec spec = ShardingSpec::Replicated(g.rank);
    if (state.data >= 0 && g.sample_axis >= 0) spec.dims[g.sample_axis] = {state.data};
    if (state.splits[i] == Split::kColumn) spec.dims[g.column_axis] = {model};
    else spec.partial = {model};
    out.push_back({g.pattern, std::move(spec), false, "auto-shard: " + g.pattern});
  }
  return out;
}

// The strategy of `state`, or an error when its annotations do not propagate or lower.
Expected<Strategy> Lower(const State& state, const Space& space, const Graph& graph, const Topology& topology) {
  const Mesh& mesh = space.meshes[state.mesh];
  Expected<ShardingPlan> plan =
      PropagateSharding(graph, mesh, Annotations(state, space), state.zero > 0 ? state.data : -1);
  if (!plan.ok()) return plan.error();
  Expected<Strategy> s = LowerSpecs(graph, plan->specs, mesh, state.zero == 3 ? state.data : -1);
  if (!s.ok()) return s.error();
  if (Status st = ValidateStrategy(*s, graph, topology); !st.ok()) return st.error();
  return s;
}

// One change to `state`: the mesh (when there are several), the data axis, the ZeRO stage (with a data axis), or
// one weight group's split.
State Propose(const State& state, const Space& space, std::mt19937_64& rng) {
  State next = state;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  auto pick = [&](int32_t n) { return std::uniform_int_distribution<int32_t>(0, n - 1)(rng); };
  const double r = unit(rng);
  const int32_t rank = space.meshes[state.mesh].rank();
  if (space.meshes.size() > 1 && r < 0.1) {
    next.mesh = (state.mesh + 1 + pick(static_cast<int32_t>(space.meshes.size()) - 1)) %
                static_cast<int32_t>(space.meshes.size());
    if (next.data >= space.meshes[next.mesh].rank()) next.data = 0;
  } else if (!space.inputs.empty() && r < 0.3) {
    next.data = (state.data + 1 + 1 + pick(rank)) % (rank + 1) - 1;  // another of -1, 0, .., rank-1
    if (next.data < 0) next.zero = 0;
  } else if (state.data >= 0 && r < 0.4) {
    constexpr int32_t kStages[] = {0, 1, 3};
    const int32_t k = static_cast<int32_t>(std::find(std::begin(kStages), std::end(kStages), state.zero) - kStages);
    next.zero = kStages[(k + 1 + pick(2)) % 3];  // one of the other two
  } else if (!space.groups.empty()) {
    const int32_t i = pick(static_cast<int32_t>(space.groups.size()));
    const WeightGroup& g = space.groups[i];
    std::vector<Split> options = {Split::kNone};
    if (g.column_axis >= 0) options.push_back(Split::kColumn);
    if (g.row) options.push_back(Split::kRow);
    options.erase(std::find(options.begin(), options.end(), state.splits[i]));
    next.splits[i] = options[pick(static_cast<int32_t>(options.size()))];
  }
  return next;
}

// The ops whose config differs between two strategies of one graph, with their configs in `to`.
std::vector<std::pair<OpId, OpConfig>> Changes(const Strategy& from, const Strategy& to) {
  std::vector<std::pair<OpId, OpConfig>> changes;
  for (OpId o = 0; o < static_cast<OpId>(from.configs.size()); ++o)
    if (!(from.configs[o] == to.configs[o])) changes.emplace_back(o, to.configs[o]);
  return changes;
}

// The best strategy so far by the objective.
struct Incumbent {
  std::optional<StepCost> cost;
  Strategy strategy;
  void Consider(const Strategy& s, const StepCost& c) {
    if (cost && !(c < *cost)) return;
    cost = c;
    strategy = s;
  }
  double step_time() const { return cost ? cost->step_time : 0.0; }
};

// The walk: from `start`, one proposal per step, priced by delta simulation when it changes few ops' configs and by
// a full simulation otherwise, accepted by Metropolis-Hastings on the penalised time.
Status Walk(const SearchProblem& problem, const AutoShardOptions& options, const Space& space, State current,
            uint64_t seed, int64_t max_attempts, BudgetTracker* budget, Incumbent* best) {
  const Graph& graph = *problem.graph;
  const Topology& topology = *problem.topology;
  Expected<Strategy> lowered = Lower(current, space, graph, topology);
  if (!lowered.ok() && current.data >= 0) {  // the batch does not divide: start replicated
    current.data = -1;
    lowered = Lower(current, space, graph, topology);
  }
  if (!lowered.ok()) return Error{"auto-shard: the starting layout: " + lowered.error().message};
  Strategy strategy = std::move(*lowered);
  Expected<DeltaSimulator> delta = DeltaSimulator::Create(graph, topology, strategy, problem.cost, problem.sim);
  if (!delta.ok()) return delta.error();
  Expected<Simulator> full = Simulator::Create(graph, topology, problem.cost, problem.sim);
  if (!full.ok()) return full.error();
  StepCost cost = CostOf(delta->result(), topology);
  best->Consider(strategy, cost);
  budget->RecordEvaluation(best->step_time());
  const double scale = cost.step_time > 0 ? cost.step_time : 1.0;
  double penalised = cost.Penalised(scale, options.oom_penalty);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const size_t small = std::max<size_t>(1, static_cast<size_t>(options.delta_fraction * graph.num_ops()));
  // Proposals that do not lower cost no evaluation; `max_attempts` bounds them so that a space of such proposals ends.
  for (int64_t attempt = 0; attempt < max_attempts && !budget->exhausted(); ++attempt) {
    const State next = Propose(current, space, rng);
    Expected<Strategy> proposal = Lower(next, space, graph, topology);
    if (!proposal.ok()) continue;
    const std::vector<std::pair<OpId, OpConfig>> changes = Changes(strategy, *proposal);
    const bool by_delta = changes.size() <= small;
    StepCost c;
    if (by_delta) {
      if (Status st = delta->SetConfigs(changes); !st.ok()) return st;
      c = CostOf(delta->result(), topology);
    } else {
      Expected<SimResult> r = full->Run(*proposal);
      if (!r.ok()) return r.error();
      c = CostOf(*r, topology);
    }
    best->Consider(*proposal, c);
    budget->RecordEvaluation(best->step_time());
    const double p = c.Penalised(scale, options.oom_penalty);
    if (p <= penalised || unit(rng) < std::exp(options.beta * (penalised - p) / scale)) {
      if (!by_delta)
        if (Status st = delta->SetConfigs(changes); !st.ok()) return st;
      current = next;
      strategy = std::move(*proposal);
      penalised = p;
    } else if (by_delta) {
      std::vector<std::pair<OpId, OpConfig>> back;
      for (const auto& [op, config] : changes) back.emplace_back(op, strategy.configs[op]);
      if (Status st = delta->SetConfigs(back); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

}  // namespace

Expected<SearchResult> AutoShardSearch::DoSearch(const SearchProblem& problem, const SearchRequest& request) const {
  Expected<std::vector<Mesh>> meshes = CandidateMeshes(*problem.topology, options_.mesh);
  if (!meshes.ok()) return meshes.error();
  SearchRequest bounded = request;
  if (request.budget.max_evaluations <= 0 && request.budget.max_seconds <= 0)
    bounded.budget.max_evaluations = options_.default_evaluations;
  BudgetTracker budget(bounded);
  Incumbent best;
  if (request.initial != nullptr) {
    Expected<SimResult> r =
        Simulate(*problem.graph, *problem.topology, *request.initial, problem.cost, problem.sim);
    if (!r.ok()) return r.error();
    best.Consider(*request.initial, CostOf(*r, *problem.topology));
    budget.RecordEvaluation(best.step_time());
  }
  const Space space = BuildSpace(*problem.graph, std::move(*meshes));
  State start;
  start.data = space.inputs.empty() ? -1 : 0;
  start.splits.assign(space.groups.size(), Split::kNone);
  const int64_t max_attempts = bounded.budget.max_evaluations > 0 ? 20 * bounded.budget.max_evaluations
                                                                    : std::numeric_limits<int64_t>::max();
  if (!budget.exhausted())
    if (Status st = Walk(problem, options_, space, start, request.seed, max_attempts, &budget, &best); !st.ok())
      return st.error();
  budget.ReportFinal(best.step_time());
  return SearchResult{std::move(best.strategy), budget.evaluations(), budget.seconds()};
}

}  // namespace devplace
