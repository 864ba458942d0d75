#include "agents/learned/policy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "agents/search.h"
#include "core/check.h"
#include "core/colocation.h"
#include "env/draft_cost.h"

namespace devplace {

namespace {

// Extra scalar context of the FiLM layer: log-size of the graph and the machine's device count, and with
// PolicyConfig::strategy_context GameTensors::strategy_context's two speedups.
int64_t ContextScalars(const PolicyConfig& config) { return config.strategy_context ? 4 : 2; }

torch::Tensor FloatTensor(const std::vector<float>& values, int64_t rows, int64_t cols) {
  return torch::from_blob(const_cast<float*>(values.data()), {rows, cols}, torch::kFloat32).clone();
}

// The kParallelNodeFeatures columns of every group (see policy.h).
torch::Tensor ParallelFeatures(const PlacementGame& game) {
  const int32_t n = game.num_groups();
  torch::Tensor x = torch::zeros({n, kParallelNodeFeatures}, torch::kFloat32);
  float* row = x.data_ptr<float>();
  const int32_t split = game.data_parallel_action();
  for (int32_t g = 0; g < n; ++g, row += kParallelNodeFeatures) {
    if (!game.can_split(g, split)) continue;
    const double slowest = game.split_slowest_seconds(g, split);
    const double saving = std::max(0.0, game.group_seconds(g, game.reference_device()) - slowest);
    const double sync = game.split_sync_seconds(g, split);
    row[0] = saving + sync > 0 ? static_cast<float>(saving / (saving + sync)) : 0.5f;
    row[1] = static_cast<float>(std::clamp(n * (saving - sync) / game.total_reference_seconds(), -4.0, 4.0));
  }
  return x;
}

// GameTensors::layer_position of every group.
torch::Tensor LayerPositions(const PlacementGame& game) {
  const int32_t n = game.num_groups();
  const std::vector<int32_t> layer = GroupLayerIndex(game.graph(), game.groups());
  const std::vector<float>& features = game.static_node_features();
  std::vector<double> share;  // per layer
  for (int32_t g = 0; g < n; ++g) {
    if (static_cast<size_t>(layer[g]) >= share.size()) share.resize(static_cast<size_t>(layer[g]) + 1, 0.0);
    share[layer[g]] += features[static_cast<size_t>(g) * kNodeFeatureDim + kNodeComputeShare];
  }
  std::vector<double> before(share.size(), 0.0);
  for (size_t l = 1; l < share.size(); ++l) before[l] = before[l - 1] + share[l - 1];
  torch::Tensor x = torch::empty({n, 1}, torch::kFloat32);
  float* row = x.data_ptr<float>();
  for (int32_t g = 0; g < n; ++g)
    row[g] = static_cast<float>(std::clamp(before[layer[g]] + 0.5 * share[layer[g]], 0.0, 1.0));
  return x;
}

}  // namespace

GameTensors MakeGameTensors(const PlacementGame& game) {
  GameTensors t;
  t.graph = MakeSageGraph(game.static_node_features(), game.num_groups(), kNodeFeatureDim, game.edge_src(),
                          game.edge_dst());
  // Cumulative compute share in topological order: the coordinate a compute-balanced contiguous split cuts.
  torch::Tensor share = t.graph.x.select(1, kNodeComputeShare);
  torch::Tensor cumulative = (share.cumsum(0) - 0.5 * share).clamp(0.0, 1.0);
  t.graph.x = torch::cat({t.graph.x, cumulative.unsqueeze(1)}, 1);
  t.layer_position = LayerPositions(game);
  const bool soap = game.config().action_space == ActionSpace::kSoap;
  if (game.data_parallel_action() >= 0 && !soap) t.graph.x = torch::cat({t.graph.x, ParallelFeatures(game)}, 1);
  if (soap)
    t.candidate_x = torch::from_blob(const_cast<float*>(game.candidate_features().data()),
                                     {game.num_groups(), game.num_candidates(), kCandidateFeatureDim}, torch::kFloat32)
                        .clone();
  t.device_x = FloatTensor(game.static_device_features(), game.num_devices(), kDeviceFeatureDim);
  t.num_devices = game.num_devices();
  t.num_actions = game.num_actions();
  return t;
}

Status AddExpertHint(const PlacementGame& game, GameTensors* tensors) {
  Expected<std::unique_ptr<SearchAlgorithm>> expert = MakeSearchAlgorithm("expert");
  if (!expert) return expert.error();
  SearchProblem problem{&game.graph(), &game.topology(), game.cost(), game.config().sim};
  Expected<SearchResult> found = (*expert)->Search(problem, SearchRequest{});
  if (!found) return Error{"expert hint on '" + game.graph().name() + "': " + found.error().message};
  const int32_t n = game.num_groups(), devices = game.num_devices(), actions = game.num_actions();
  std::vector<int64_t> action(static_cast<size_t>(n));
  for (int32_t g = 0; g < n; ++g)  // the expert places whole layers: its leader's device
    action[g] = found->strategy.configs[game.groups().members[g].front()].devices[0];
  // Each device's compute share under the expert's placement, then per group and action the mean over the
  // action's devices of the other groups' share there, times the device count (1: an even spread).
  const std::vector<float>& features = game.static_node_features();
  std::vector<double> share(static_cast<size_t>(n)), device_load(static_cast<size_t>(devices), 0.0);
  for (int32_t g = 0; g < n; ++g) {
    share[g] = features[static_cast<size_t>(g) * kNodeFeatureDim + kNodeComputeShare];
    device_load[action[g]] += share[g];
  }
  std::vector<std::vector<DeviceId>> action_devices(static_cast<size_t>(actions));
  for (int32_t a = 0; a < actions; ++a)
    action_devices[a] =
        a < devices ? std::vector<DeviceId>{static_cast<DeviceId>(a)} : game.candidate(a - devices).devices;
  torch::Tensor load = torch::empty({n, actions}, torch::kFloat32);
  float* out = load.data_ptr<float>();
  for (int32_t g = 0; g < n; ++g)
    for (int32_t a = 0; a < actions; ++a) {
      double sum = 0.0;
      for (DeviceId d : action_devices[a]) sum += device_load[d] - (d == action[g] ? share[g] : 0.0);
      out[static_cast<size_t>(g) * actions + a] =
          static_cast<float>(devices * sum / static_cast<double>(action_devices[a].size()));
    }
  tensors->expert_action = torch::tensor(action, torch::kInt64);
  tensors->expert_load = load;
  return Status::Ok();
}

void AddDraftCosts(const PlacementGame& game, GameTensors* tensors) {
  const int64_t actions = game.num_actions();
  const std::vector<double> per_byte = ActionReshardSecondsPerByte(game);
  std::vector<float> matrix(per_byte.begin(), per_byte.end());
  tensors->draft_per_byte = FloatTensor(matrix, actions, actions);
  tensors->draft_per_byte_t = tensors->draft_per_byte.t().contiguous();
  const std::vector<double> bytes = GroupEdgeBytes(game);
  const double scale =
      game.total_reference_seconds() > 0 ? game.num_groups() / game.total_reference_seconds() : 0.0;
  std::vector<float> weight(bytes.size());
  for (size_t e = 0; e < bytes.size(); ++e) weight[e] = static_cast<float>(bytes[e] * scale);
  tensors->draft_edge_weight = torch::tensor(weight, torch::kFloat32);
}

Status AddStrategyContext(const PlacementGame& game, GameTensors* tensors) {
  DEVPLACE_CHECK(tensors->expert_action.defined(), "the strategy context needs the expert hint (AddExpertHint)");
  const int64_t* action = tensors->expert_action.data_ptr<int64_t>();
  std::vector<int32_t> expert(action, action + game.num_groups());
  Expected<SimResult> simulated = game.Evaluate(expert);
  if (!simulated) return Error{"strategy context on '" + game.graph().name() + "': " + simulated.error().message};
  double best_split = 0.0;  // the best uniform split's step time, 0 when the game simulated none
  for (int32_t c = 0; c < game.num_candidates(); ++c)
    if (const double u = game.uniform_step_time(c); u > 0 && (best_split == 0.0 || u < best_split)) best_split = u;
  const double log_devices = std::log(static_cast<double>(game.num_devices()));
  auto speedup = [&](double time) {
    if (time <= 0 || log_devices <= 0) return 0.0f;
    return static_cast<float>(std::clamp(std::log(game.reference_time() / time) / log_devices, -1.0, 1.0));
  };
  tensors->strategy_context =
      torch::tensor({speedup(game.PenalisedTime(CostOf(*simulated, game.topology()))), speedup(best_split)});
  return Status::Ok();
}

Status AddPolicyInputs(const PolicyConfig& config, const PlacementGame& game, GameTensors* tensors) {
  if (config.expert_hint)
    if (Status s = AddExpertHint(game, tensors); !s) return s;
  if (config.draft_cost) AddDraftCosts(game, tensors);
  if (config.strategy_context)
    if (Status s = AddStrategyContext(game, tensors); !s) return s;
  return Status::Ok();
}

XlLayerImpl::XlLayerImpl(int64_t hidden, int64_t heads, int64_t feedforward) {
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
  attention_ = register_module(
      "attention", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(hidden, heads).dropout(0.0)));
  ff1_ = register_module("ff1", torch::nn::Linear(hidden, feedforward));
  ff2_ = register_module("ff2", torch::nn::Linear(feedforward, hidden));
}

torch::Tensor XlLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& memory) {
  torch::Tensor q = norm1_(x);
  torch::Tensor kv = memory.defined() ? torch::cat({norm1_(memory), q}, 0) : q;
  torch::Tensor attended = std::get<0>(attention_->forward(q, kv, kv, /*key_padding_mask=*/{}, /*need_weights=*/false));
  torch::Tensor h = x + attended;
  return h + ff2_(torch::relu(ff1_(norm2_(h))));
}

TransformerPlacerImpl::TransformerPlacerImpl(const PolicyConfig& config) : config_(config) {
  const int64_t h = config.hidden;
  sage_ = register_module(
      "sage", GraphSage(kTransformerNodeFeatures + (config.data_parallel_action ? kParallelNodeFeatures : 0) +
                            (config.layer_split ? 1 : 0),
                        h, config.sage_layers));
  const int64_t context = 2 * h + kDeviceFeatureDim + ContextScalars(config);  // FiLM's, the gate's, the value's
  film_ = register_module("film", torch::nn::Linear(context, 2 * h));
  for (int32_t i = 0; i < config.transformer_layers; ++i)
    layers_.push_back(register_module("xl" + std::to_string(i), XlLayer(h, config.heads, config.feedforward)));
  out_norm_ = register_module("out_norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({h})));
  device_head_ = register_module("device_head", torch::nn::Linear(h, config.max_devices));
  split_head_ = register_module("split_head", torch::nn::Linear(1, config.max_devices));
  query_ = register_module("query", torch::nn::Linear(h, h));
  device_key_ = register_module("device_key", torch::nn::Linear(kDeviceFeatureDim, h));
  if (config.data_parallel_action) parallel_head_ = register_module("parallel_head", torch::nn::Linear(h, 1));
  if (config.layer_split) {
    layer_head_ = register_module("layer_head", torch::nn::Linear(1, config.max_devices));
    layer_gate_ = register_module("layer_gate", torch::nn::Linear(context, 1));
  }
  if (config.soap) {
    candidate_query_ = register_module("candidate_query", torch::nn::Linear(h, h));
    candidate_key_ = register_module("candidate_key", torch::nn::Linear(config.candidate_features, h));
    candidate_head_ = register_module("candidate_head", torch::nn::Linear(h, 1));
    candidate_linear_ = register_module("candidate_linear", torch::nn::Linear(config.candidate_features, 1));
  }
  if (config.coherence) coherence_head_ = register_module("coherence_head", torch::nn::Linear(h, 2));
  if (config.expert_hint) hint_head_ = register_module("hint_head", torch::nn::Linear(h, 2));
  if (config.draft_cost) draft_head_ = register_module("draft_head", torch::nn::Linear(h, 1));
  value1_ = register_module("value1", torch::nn::Linear(context, h));
  value2_ = register_module("value2", torch::nn::Linear(h, 1));
}

torch::Tensor TransformerPlacerImpl::Cohere(const torch::Tensor& logits, const torch::Tensor& first,
                                            const OneShotOutput& out, const GameTensors& game) const {
  if (!config_.coherence) return logits;
  const int64_t n = logits.size(1), a = logits.size(2);
  const torch::Tensor& src = game.graph.src;
  const torch::Tensor& dst = game.graph.dst;
  torch::Tensor chosen = torch::one_hot(first, a).to(torch::kFloat32);  // [B, N, A]
  torch::Tensor votes = torch::zeros_like(chosen);
  votes.index_add_(1, dst, chosen.index_select(1, src));
  votes.index_add_(1, src, chosen.index_select(1, dst));
  torch::Tensor degree = (torch::bincount(src, {}, n) + torch::bincount(dst, {}, n)).clamp_min(1);
  votes = votes / degree.to(torch::kFloat32).view({1, n, 1});
  // [N, A]: each action's weight, the group's device column on the devices, its split column on the rest.
  torch::Tensor weight = torch::cat({out.coherence.slice(1, 0, 1).expand({n, game.num_devices}),
                                     out.coherence.slice(1, 1, 2).expand({n, a - game.num_devices})},
                                    1);
  torch::Tensor cohered = logits + votes * weight.unsqueeze(0);
  if (!config_.draft_cost) return cohered;
  DEVPLACE_CHECK(game.draft_per_byte.defined() && out.draft.defined(),
                 "a draft-cost policy needs the game's draft costs (AddDraftCosts)");
  // [B, N, A]: per group and action, the weighted seconds per byte against each neighbour's first action, as the
  // consumer of its in-edges (row: the producer's first action) and the producer of its out-edges.
  const int64_t b = first.size(0), e = src.size(0);
  torch::Tensor edge_weight = game.draft_edge_weight.view({1, e, 1});
  torch::Tensor as_consumer =
      game.draft_per_byte.index_select(0, first.index_select(1, src).reshape({-1})).view({b, e, a}) * edge_weight;
  torch::Tensor as_producer =
      game.draft_per_byte_t.index_select(0, first.index_select(1, dst).reshape({-1})).view({b, e, a}) * edge_weight;
  torch::Tensor cost = torch::zeros({b, n, a}, torch::kFloat32);
  cost.index_add_(1, dst, as_consumer);
  cost.index_add_(1, src, as_producer);
  return cohered + torch::log1p(cost) * out.draft.unsqueeze(0);
}

OneShotOutput TransformerPlacerImpl::forward(const GameTensors& game) {
  DEVPLACE_CHECK(game.num_devices <= config_.max_devices, "more devices than the policy addresses");
  DEVPLACE_CHECK((game.num_actions > game.num_devices) == (config_.data_parallel_action || config_.soap) &&
                     game.candidate_x.defined() == config_.soap,
                 "the policy and the game disagree on the split actions");
  const int64_t n = game.graph.num_nodes();
  SageGraph graph = game.graph;
  if (config_.layer_split) graph.x = torch::cat({graph.x, game.layer_position}, 1);
  torch::Tensor h = sage_(graph);  // [N, H]
  torch::Tensor scalars = torch::tensor({static_cast<float>(std::log1p(static_cast<double>(n)) / 10.0),
                                         static_cast<float>(game.num_devices) / config_.max_devices});
  if (config_.strategy_context) {
    DEVPLACE_CHECK(game.strategy_context.defined(),
                   "a strategy-context policy needs the game's strategy context (AddStrategyContext)");
    scalars = torch::cat({scalars, game.strategy_context});
  }
  torch::Tensor context = torch::cat({h.mean(0), std::get<0>(h.max(0)), game.device_x.mean(0), scalars});
  torch::Tensor film = film_(context);
  torch::Tensor gamma = film.slice(0, 0, config_.hidden), beta = film.slice(0, config_.hidden);
  h = h * (1 + gamma) + beta;

  // Segment-level recurrence: each layer attends over (its input on the previous segment, this segment).
  if (!layers_.empty()) {
    std::vector<torch::Tensor> memory(layers_.size());
    std::vector<torch::Tensor> outputs;
    for (int64_t start = 0; start < n; start += config_.segment) {
      torch::Tensor x = h.slice(0, start, std::min(n, start + config_.segment)).unsqueeze(1);  // [L, 1, H]
      for (size_t l = 0; l < layers_.size(); ++l) {
        torch::Tensor input = x;
        x = layers_[l]->forward(x, memory[l]);
        memory[l] = input.detach();
      }
      outputs.push_back(x.squeeze(1));
    }
    h = torch::cat(outputs, 0);
  }
  h = out_norm_(h);
  torch::Tensor keys = device_key_(game.device_x);  // [D, H]
  // Split head: per-device lines in the cumulative compute share; their upper envelope is a contiguous,
  // compute-balanced split, so the policy can move whole ranges of groups with a few parameters.
  torch::Tensor cumulative = game.graph.x.slice(1, kNodeFeatureDim, kNodeFeatureDim + 1);
  torch::Tensor lines = device_head_(h) + split_head_(cumulative);
  // The same in the layer sequence, switched on or off per graph: contiguous runs of layers per device.
  if (config_.layer_split) lines = lines + layer_gate_(context) * layer_head_(game.layer_position);
  torch::Tensor logits = lines.slice(1, 0, game.num_devices) +
                         torch::matmul(query_(h), keys.t()) / std::sqrt(static_cast<double>(config_.hidden));
  if (config_.data_parallel_action) logits = torch::cat({logits, parallel_head_(h)}, 1);
  if (config_.soap) {
    // [N, C]: each candidate scored from the group's state and the candidate's features.
    torch::Tensor x = game.candidate_x.slice(2, 0, config_.candidate_features);  // the columns it was trained on
    torch::Tensor z = torch::relu(candidate_query_(h).unsqueeze(1) + candidate_key_(x));
    torch::Tensor split = candidate_head_(z).squeeze(2) + candidate_linear_(x).squeeze(2);
    logits = torch::cat({logits, split}, 1);
  }
  if (config_.expert_hint) {
    DEVPLACE_CHECK(game.expert_action.defined() && game.expert_load.defined(),
                   "an expert-hint policy needs the game's expert actions and loads (AddExpertHint)");
    torch::Tensor weight = hint_head_(h);  // [N, 2]
    logits = logits +
             torch::one_hot(game.expert_action, game.num_actions).to(torch::kFloat32) * weight.slice(1, 0, 1) +
             game.expert_load * weight.slice(1, 1, 2);
  }
  torch::Tensor summary = torch::cat({h.mean(0), std::get<0>(h.max(0)), game.device_x.mean(0), scalars});
  torch::Tensor value = value2_(torch::relu(value1_(summary))).squeeze(0);
  return {logits, value, config_.coherence ? coherence_head_(h) : torch::Tensor(),
          config_.draft_cost ? draft_head_(h) : torch::Tensor()};
}

IterativeBatch StackObservations(const std::vector<const Observation*>& observations) {
  DEVPLACE_CHECK(!observations.empty(), "no observations");
  const Observation& first = *observations.front();
  const int64_t t = static_cast<int64_t>(observations.size()), n = first.num_nodes, d = first.num_devices;
  IterativeBatch b;
  b.node_x = torch::empty({t, n, kNodeFeatureDim}, torch::kFloat32);
  b.placement = torch::empty({t, n}, torch::kInt64);
  b.device_x = torch::empty({t, d, kDeviceFeatureDim}, torch::kFloat32);
  b.current = torch::empty({t}, torch::kInt64);
  float* nx = b.node_x.data_ptr<float>();
  int64_t* pl = b.placement.data_ptr<int64_t>();
  float* dx = b.device_x.data_ptr<float>();
  int64_t* cur = b.current.data_ptr<int64_t>();
  for (int64_t i = 0; i < t; ++i) {
    const Observation& o = *observations[i];
    DEVPLACE_CHECK(o.num_nodes == n && o.num_devices == d, "observations of different games");
    std::copy(o.node_features.begin(), o.node_features.end(), nx + i * n * kNodeFeatureDim);
    for (int64_t k = 0; k < n; ++k) pl[i * n + k] = o.placement[k];
    std::copy(o.device_features.begin(), o.device_features.end(), dx + i * d * kDeviceFeatureDim);
    cur[i] = o.current_node;
  }
  return b;
}

PlacetoPolicyImpl::PlacetoPolicyImpl(const PolicyConfig& config) : config_(config) {
  const int64_t h = config.hidden;
  sage_ = register_module("sage", GraphSage(kNodeFeatureDim + PlacementSlots(), h, config.sage_layers));
  hidden_ = register_module("hidden", torch::nn::Linear(2 * h, h));
  device_head_ = register_module("device_head", torch::nn::Linear(h, config.max_devices));
  query_ = register_module("query", torch::nn::Linear(h, h));
  device_key_ = register_module("device_key", torch::nn::Linear(kDeviceFeatureDim, h));
  if (config.data_parallel_action) parallel_head_ = register_module("parallel_head", torch::nn::Linear(h, 1));
  value1_ = register_module("value1", torch::nn::Linear(2 * h, h));
  value2_ = register_module("value2", torch::nn::Linear(h, 1));
}

IterativeOutput PlacetoPolicyImpl::forward(const IterativeBatch& batch, const torch::Tensor& edge_src,
                                           const torch::Tensor& edge_dst) {
  const int64_t t = batch.node_x.size(0), n = batch.node_x.size(1), d = batch.device_x.size(1);
  DEVPLACE_CHECK(d <= config_.max_devices, "more devices than the policy addresses");
  // Placement as a one-hot over max_devices, an "unplaced" column and, with the data-parallel action, a
  // "data-parallel" column (the action's id is the game's device count, which the devices' columns may reach).
  torch::Tensor slot = torch::where(batch.placement < 0, torch::full_like(batch.placement, config_.max_devices),
                                    batch.placement);
  if (config_.data_parallel_action)
    slot = torch::where(batch.placement == d, torch::full_like(batch.placement, config_.max_devices + 1), slot);
  torch::Tensor onehot = torch::one_hot(slot, PlacementSlots()).to(torch::kFloat32);
  torch::Tensor x = torch::cat({batch.node_x, onehot}, 2).reshape({t * n, -1});
  torch::Tensor h = sage_(RepeatEdges(x, edge_src, edge_dst, t, n)).reshape({t, n, -1});
  torch::Tensor current = h.gather(1, batch.current.view({t, 1, 1}).expand({t, 1, h.size(2)})).squeeze(1);
  torch::Tensor both = torch::cat({current, h.mean(1)}, 1);  // [T, 2H]
  torch::Tensor z = torch::relu(hidden_(both));
  torch::Tensor keys = device_key_(batch.device_x);  // [T, D, H]
  torch::Tensor logits = device_head_(z).slice(1, 0, d) +
                         torch::bmm(keys, query_(z).unsqueeze(2)).squeeze(2) /
                             std::sqrt(static_cast<double>(config_.hidden));
  if (config_.data_parallel_action) logits = torch::cat({logits, parallel_head_(z)}, 1);
  torch::Tensor values = value2_(torch::relu(value1_(both))).squeeze(1);
  return {logits, values};
}

PolicyNet::PolicyNet(const PolicyConfig& config, uint64_t seed) : config_(config) {
  std::mt19937_64 rng(seed);
  if (is_transformer())
    transformer_ = TransformerPlacer(config);
  else
    placeto_ = PlacetoPolicy(config);
  InitParameters(module(), rng);
  // Output layers start 100x smaller, so the first policy is close to uniform over the legal devices and
  // explores (as PPO implementations initialise their policy heads).
  torch::NoGradGuard no_grad;
  for (auto& item : module().named_parameters(true))
    if (item.key().rfind("device_head.", 0) == 0 || item.key().rfind("query.", 0) == 0 ||
        item.key().rfind("split_head.", 0) == 0 || item.key().rfind("parallel_head.", 0) == 0 ||
        item.key().rfind("candidate_head.", 0) == 0 || item.key().rfind("candidate_linear.", 0) == 0 ||
        item.key().rfind("layer_head.", 0) == 0 || item.key().rfind("layer_gate.weight", 0) == 0)
      item.value().mul_(0.01);
  // The layer head starts switched on on every graph (gate about 1), as the topological split head is.
  for (auto& item : module().named_parameters(true))
    if (item.key() == "layer_gate.bias") item.value().fill_(1.0);
  // The coherence pass starts switched off (weights 0): a fresh policy decodes as the one-pass policy.
  for (auto& item : module().named_parameters(true))
    if (item.key().rfind("coherence_head.", 0) == 0) item.value().zero_();
  // So does the expert hint: a fresh policy decodes as one without it.
  for (auto& item : module().named_parameters(true))
    if (item.key().rfind("hint_head.", 0) == 0) item.value().zero_();
  // And the draft cost: a fresh policy's second pass is the coherence pass alone.
  for (auto& item : module().named_parameters(true))
    if (item.key().rfind("draft_head.", 0) == 0) item.value().zero_();
}

torch::nn::Module& PolicyNet::module() {
  return is_transformer() ? static_cast<torch::nn::Module&>(*transformer_) : static_cast<torch::nn::Module&>(*placeto_);
}

std::unique_ptr<PolicyNet> PolicyNet::Clone() {
  auto copy = std::make_unique<PolicyNet>(config_, 0);
  torch::NoGradGuard no_grad;
  auto from = module().named_parameters(true);
  auto to = copy->module().named_parameters(true);
  for (const auto& item : from) to[item.key()].copy_(item.value());
  return copy;
}

torch::Tensor MaskedLogProbs(const torch::Tensor& logits, const torch::Tensor& mask) {
  return torch::log_softmax(logits.masked_fill(mask.logical_not(), -1e9), -1);
}

torch::Tensor MaskedEntropy(const torch::Tensor& log_probs) { return -(log_probs.exp() * log_probs).sum(-1); }

int32_t ChooseDevice(const float* logits, const uint8_t* mask, int32_t num_actions, bool greedy, double u) {
  int32_t best = -1;
  for (int32_t d = 0; d < num_actions; ++d)
    if (mask[d] && (best < 0 || logits[d] > logits[best])) best = d;
  DEVPLACE_CHECK(best >= 0, "no legal action");
  if (greedy) return best;
  double total = 0.0;
  double weights[1024];
  DEVPLACE_CHECK(num_actions <= 1024, "too many actions");
  for (int32_t d = 0; d < num_actions; ++d) {
    weights[d] = mask[d] ? std::exp(static_cast<double>(logits[d]) - logits[best]) : 0.0;
    total += weights[d];
  }
  double target = u * total, cumulative = 0.0;
  int32_t last = best;
  for (int32_t d = 0; d < num_actions; ++d) {
    if (!mask[d]) continue;
    cumulative += weights[d];
    last = d;
    if (target < cumulative) return d;
  }
  return last;
}

}  // namespace devplace
