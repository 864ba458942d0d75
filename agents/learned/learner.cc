#include "agents/learned/learner.h"

#include <dlfcn.h>

#include <algorithm>
#include <mutex>
#include <utility>

#include "agents/learned/adam_step.h"
#include "agents/learned/ppo.h"
#include "distributed/process_group.h"
#include "core/check.h"
#include "core/parallel.h"

namespace devplace {

namespace {

torch::Tensor DoubleTensor(const std::vector<double>& values) {
  return torch::tensor(values, torch::kFloat64).to(torch::kFloat32);
}

// Fisher-Yates with our own generator (std::shuffle's algorithm differs between standard libraries).
void Shuffle(std::vector<size_t>* order, std::mt19937_64& rng) {
  for (size_t i = order->size(); i > 1; --i) std::swap((*order)[i - 1], (*order)[rng() % i]);
}

// The training data of a rollout as bytes (a LibTorch archive of buffers), and back.
std::string PackRollout(const GameRollout& r) {
  torch::serialize::OutputArchive archive;
  auto put = [&](const char* key, const torch::Tensor& t) { archive.write(key, t, /*is_buffer=*/true); };
  put("actions", r.actions);
  put("masks", r.masks);
  put("old_logp", r.old_logp);
  put("values", torch::tensor(r.values, torch::kFloat64));
  put("returns", torch::tensor(r.returns, torch::kFloat64));
  put("advantages", torch::tensor(r.advantages, torch::kFloat64));
  put("demonstrated", torch::tensor({r.demonstrated ? 1 : 0}, torch::kInt64));
  put("coherent", torch::tensor({r.first_actions.defined() ? 1 : 0}, torch::kInt64));
  if (r.first_actions.defined()) put("first_actions", r.first_actions);
  const bool iterative = r.observations.node_x.defined();
  put("iterative", torch::tensor({iterative ? 1 : 0}, torch::kInt64));
  if (iterative) {
    put("node_x", r.observations.node_x);
    put("placement", r.observations.placement);
    put("device_x", r.observations.device_x);
    put("current", r.observations.current);
  }
  std::string bytes;
  archive.save_to([&](const void* data, size_t size) {
    bytes.append(static_cast<const char*>(data), size);
    return size;
  });
  return bytes;
}

GameRollout UnpackRollout(const std::string& bytes, const GameEntry* entry) {
  torch::serialize::InputArchive archive;
  archive.load_from(bytes.data(), bytes.size());
  auto get = [&](const char* key) {
    torch::Tensor t;
    archive.read(key, t, /*is_buffer=*/true);
    return t;
  };
  auto doubles = [&](const char* key) {
    torch::Tensor t = get(key).contiguous();
    return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  };
  GameRollout r;
  r.entry = entry;
  r.actions = get("actions");
  r.masks = get("masks");
  r.old_logp = get("old_logp");
  r.values = doubles("values");
  r.returns = doubles("returns");
  r.advantages = doubles("advantages");
  r.demonstrated = get("demonstrated").item<int64_t>() != 0;
  if (get("coherent").item<int64_t>() != 0) r.first_actions = get("first_actions");
  if (get("iterative").item<int64_t>() != 0)
    r.observations = {get("node_x"), get("placement"), get("device_x"), get("current")};
  return r;
}

// Sums the parameters' gradients over the group (one flat all-reduce). A gradient that is undefined on every
// rank (no rollout reached the parameter) stays undefined, as it would in one process.
Status SumGradients(const std::vector<torch::Tensor>& parameters, ProcessGroup& group) {
  int64_t total = 0;
  for (const torch::Tensor& p : parameters) total += p.numel();
  const int64_t count = static_cast<int64_t>(parameters.size());
  torch::Tensor flat = torch::zeros({total + count}, torch::kFloat32);  // gradients, then one "defined" flag each
  int64_t offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    const torch::Tensor& p = parameters[i];
    if (p.grad().defined()) {
      flat.narrow(0, offset, p.numel()).copy_(p.grad().reshape({-1}));
      flat[total + i] = 1.0f;
    }
    offset += p.numel();
  }
  if (Status s = group.AllReduceSum(flat, "gradient all-reduce"); !s) return s;
  offset = 0;
  for (int64_t i = 0; i < count; ++i) {
    torch::Tensor p = parameters[i];
    if (flat[total + i].item<float>() > 0) {
      if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
      p.mutable_grad().copy_(flat.narrow(0, offset, p.numel()).view_as(p));
    }
    offset += p.numel();
  }
  return Status::Ok();
}

// One game's share of a minibatch step: the gradient of its weighted loss with respect to every parameter
// (undefined where the loss does not reach it) and its weighted statistics (policy, value, entropy, clip
// fraction, approx KL).
struct GameGradient {
  std::vector<torch::Tensor> gradients;
  double stats[5] = {0, 0, 0, 0, 0};
};

// Adds the games' gradients into the parameters' .grad in game order, each game's as soon as it and every game
// before it are done (by the thread that finished the last of them), so that the sum overlaps the games still
// running; the sums equal adding the games one after another in order.
class InOrderGradientSum {
 public:
  InOrderGradientSum(const std::vector<torch::Tensor>& parameters, std::vector<GameGradient>& parts)
      : parameters_(parameters), parts_(parts), done_(parts.size(), 0) {}
  // parts[j] holds game j's gradients.
  void Done(size_t j) {
    std::unique_lock<std::mutex> lock(mutex_);
    done_[j] = 1;
    if (adding_) return;  // the thread adding will find it
    adding_ = true;
    while (next_ < done_.size() && done_[next_]) {
      const size_t k = next_++;
      lock.unlock();
      Add(parts_[k]);
      lock.lock();
    }
    adding_ = false;
  }

 private:
  void Add(GameGradient& part) {
    for (size_t p = 0; p < parameters_.size(); ++p) {
      torch::Tensor& g = part.gradients[p];
      if (!g.defined()) continue;
      torch::Tensor param = parameters_[p];
      if (param.grad().defined())
        param.mutable_grad().add_(g);
      else  // a copy in the parameter's layout: autograd may return a view
        param.mutable_grad() = torch::empty_like(param).copy_(g);
      g = torch::Tensor();  // added; its memory can go
    }
  }

  const std::vector<torch::Tensor>& parameters_;
  std::vector<GameGradient>& parts_;
  std::mutex mutex_;
  std::vector<uint8_t> done_;
  size_t next_ = 0;
  bool adding_ = false;
};

}  // namespace

void RunParallel(size_t count, int32_t threads, const std::function<void(size_t)>& work) {
  if (std::min<size_t>(count, static_cast<size_t>(std::max(1, threads))) <= 1) {
    ParallelFor(count, 1, work);
    return;
  }
  const int32_t intra_op = at::get_num_threads();
  SetPolicyThreads(1);
  // Each thread's OpenMP setting (a new thread would otherwise start from the default).
  auto restore = [&] { SetPolicyThreads(intra_op); };
  try {
    ParallelFor(count, threads, work, [] { at::set_num_threads(1); });
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

void SetPolicyThreads(int32_t threads) {
  at::set_num_threads(threads);
  // Looked up at run time: the BLAS library is LibTorch's dependency, not ours, and may not be OpenBLAS.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

GameEntry MakeGameEntry(std::shared_ptr<const PlacementGame> game, std::string label) {
  GameEntry e;
  e.tensors = MakeGameTensors(*game);
  e.game = std::move(game);
  e.label = std::move(label);
  return e;
}

PpoLearner::PpoLearner(PolicyNet* net, const PpoConfig& config, int64_t total_iterations, int32_t threads)
    : net_(net), config_(config), total_iterations_(std::max<int64_t>(1, total_iterations)),
      threads_(std::max(1, threads)), coherence_passes_(net->config().coherence_passes) {
  optimizer_ = std::make_unique<torch::optim::Adam>(net_->module().parameters(),
                                                    torch::optim::AdamOptions(config.lr));
}

void PpoLearner::set_ensemble(std::vector<PolicyNet*> others, int32_t threads) {
  for (const PolicyNet* member : others)
    DEVPLACE_CHECK(member->is_transformer() && net_->is_transformer(), "an ensemble of one-shot policies only");
  ensemble_ = std::move(others);
  ensemble_threads_ = std::max(1, threads);
}

double PpoLearner::Progress(int64_t iteration) const {
  return total_iterations_ <= 1 ? 0.0 : std::min(1.0, static_cast<double>(iteration) / (total_iterations_ - 1));
}

double PpoLearner::LearningRate(int64_t iteration) const {
  return config_.lr + (config_.lr_final - config_.lr) * Progress(iteration);
}

GameRollout PpoLearner::Collect(const GameEntry& entry, int32_t samples, bool greedy, std::mt19937_64& rng) {
  DEVPLACE_CHECK(samples >= 1, "at least one episode");
  DEVPLACE_CHECK(entry.game->kind() == (net_->is_transformer() ? MdpKind::kOneShot : MdpKind::kIterative),
                 "policy and environment MDP differ");
  DEVPLACE_CHECK(ensemble_.empty() || net_->is_transformer(), "an ensemble decodes the one-shot MDP only");
  return net_->is_transformer() ? CollectOneShot(entry, samples, greedy, rng)
                                : CollectIterative(entry, samples, greedy, rng);
}

GameRollout PpoLearner::CollectOneShot(const GameEntry& entry, int32_t samples, bool greedy, std::mt19937_64& rng) {
  const PlacementGame& game = *entry.game;
  const int64_t n = game.num_groups(), d = game.num_actions(), s_count = greedy ? 1 : samples;
  const bool baseline = !greedy && config_.baseline == PpoConfig::Baseline::kGreedy;
  torch::NoGradGuard no_grad;
  // The policies that decode (net_, then set_ensemble's members) and their forward passes.
  std::vector<PolicyNet*> nets{net_};
  nets.insert(nets.end(), ensemble_.begin(), ensemble_.end());
  // Runs pass(m) for every member m, on ensemble_threads_ threads when there are several members.
  auto for_members = [&](const std::function<void(size_t)>& pass) {
    RunParallel(nets.size(), nets.size() > 1 ? ensemble_threads_ : 1, [&](size_t m) {
      torch::NoGradGuard no_grad_here;  // grad mode is per thread
      pass(m);
    });
  };
  std::vector<OneShotOutput> outs(nets.size());
  for_members([&](size_t m) { outs[m] = nets[m]->transformer()->forward(entry.tensors); });
  const OneShotOutput& out = outs[0];
  std::vector<uint8_t> legal;  // per group: every device, the splits it can take (for the coherence pass, ensembles)
  if (net_->config().coherence || nets.size() > 1) {
    legal.assign(static_cast<size_t>(n * d), 1);
    for (int64_t g = 0; g < n; ++g)
      for (int64_t k = game.num_devices(); k < d; ++k)
        legal[g * d + k] = game.can_split(static_cast<int32_t>(g), static_cast<int32_t>(k)) ? 1 : 0;
  }
  const torch::Tensor illegal =
      nets.size() > 1 ? torch::from_blob(legal.data(), {n, d}, torch::kUInt8).eq(0) : torch::Tensor();
  // One pass's logits from each member's ([n, d] or [rows, n, d]): net_'s alone, or the members' mean
  // log-probability over the legal actions (illegal ones far below every legal one).
  auto combine = [&](const std::vector<torch::Tensor>& member_logits) {
    if (member_logits.size() == 1) return member_logits[0];
    torch::Tensor sum;
    for (const torch::Tensor& l : member_logits) {
      const torch::Tensor lp = l.masked_fill(illegal, -1e9).log_softmax(-1);
      sum = sum.defined() ? sum + lp : lp;
    }
    return sum / static_cast<double>(member_logits.size());
  };
  std::vector<torch::Tensor> first_pass;
  for (const OneShotOutput& o : outs) first_pass.push_back(o.logits);
  torch::Tensor logits = (combine(first_pass) / config_.temperature).contiguous();
  GameRollout r;
  r.entry = &entry;
  // With PolicyConfig::coherence each episode decodes twice: first actions from `logits` (each group's legal
  // splits, every device), then its own logits from the second pass (run coherence_passes_ times, each on the
  // previous pass's actions). Row s is sample s, the last row the greedy baseline's episode.
  const int64_t rows = s_count + (baseline ? 1 : 0);
  torch::Tensor episode_logits;
  if (net_->config().coherence) {
    torch::Tensor first = torch::empty({rows, n}, torch::kInt64);
    // Chooses every row's action per group from `from` ([n, d] shared by the rows, or [rows, n, d]) into `first`.
    auto choose = [&](const torch::Tensor& from) {
      int64_t* fa = first.data_ptr<int64_t>();
      const float* lp = from.data_ptr<float>();
      const int64_t stride = from.dim() == 3 ? from.stride(0) : 0;
      for (int64_t row = 0; row < rows; ++row) {
        const bool pick_greedy = greedy || row >= s_count;
        for (int64_t g = 0; g < n; ++g)
          fa[row * n + g] = ChooseDevice(lp + row * stride + g * d, legal.data() + g * d, static_cast<int32_t>(d),
                                         pick_greedy, pick_greedy ? 0.0 : UniformUnit(rng));
      }
    };
    auto cohere = [&] {
      std::vector<torch::Tensor> second_pass(nets.size());
      for_members([&](size_t m) {
        second_pass[m] = nets[m]->transformer()->Cohere(outs[m].logits.unsqueeze(0).expand({rows, n, d}), first,
                                                        outs[m], entry.tensors);
      });
      return (combine(second_pass) / config_.temperature).contiguous();
    };
    choose(logits);
    // PolicyConfig::coherence_passes: each further pass decodes on the previous one's actions.
    for (int32_t pass = 1; pass < coherence_passes_; ++pass) {
      const torch::Tensor refined = cohere();  // a new tensor: `first` can be overwritten
      choose(refined);
    }
    r.first_actions = first.slice(0, 0, s_count).clone();
    episode_logits = cohere();
  } else {
    episode_logits = logits.unsqueeze(0).expand({rows, n, d});  // every row reads `logits`, not a copy
  }
  const float* elp = episode_logits.data_ptr<float>();
  const int64_t row_stride = episode_logits.stride(0);
  r.actions = torch::empty({s_count, n}, torch::kInt64);
  r.masks = torch::empty({s_count, n, d}, torch::kBool);
  int64_t* act = r.actions.data_ptr<int64_t>();
  bool* msk = r.masks.data_ptr<bool>();
  std::vector<double> rewards;
  const bool demonstrate = !greedy && s_count >= 2 && !entry.demonstration.empty();
  // Plays the episode of row `row`: sample `row` (recorded) or, past the samples, the greedy baseline's.
  auto play = [&](int64_t row) {
    const bool sample = row < s_count, pick_greedy = greedy || !sample;
    const float* lp = elp + row * row_stride;
    PlacementState state = game.NewInitialState(rng());
    while (!state.IsTerminal()) {
      const int64_t node = state.current_node();
      const std::vector<uint8_t>& mask = state.LegalActionsMask();
      if (sample)
        for (int64_t k = 0; k < d; ++k) msk[(row * n + node) * d + k] = mask[k] != 0;
      const double u = sample ? UniformUnit(rng) : 0.0;
      int32_t a = ChooseDevice(lp + node * d, mask.data(), static_cast<int32_t>(d), pick_greedy, u);
      if (demonstrate && row == 0 && mask[entry.demonstration[node]] != 0) a = entry.demonstration[node];
      if (sample) act[row * n + node] = a;
      Status applied = state.ApplyAction(a);
      DEVPLACE_CHECK(applied.ok(), applied.ok() ? "" : applied.error().message);
    }
    return state;
  };
  for (int64_t s = 0; s < s_count; ++s) {
    const PlacementState state = play(s);
    r.episodes.push_back({state.placement(), state.penalised_time(), state.cost(), state.Return()});
    r.demonstrated = demonstrate;
    rewards.push_back(state.Return());
  }
  r.evaluations = s_count;
  r.old_logp = MaskedLogProbs(episode_logits.slice(0, 0, s_count), r.masks)
                   .gather(2, r.actions.unsqueeze(2))
                   .squeeze(2);
  r.values.assign(s_count, out.value.item<double>());
  GaeResult gae = ComputeGae(rewards, r.values, std::vector<uint8_t>(s_count, 1), 0.0, config_.gamma,
                             config_.gae_lambda);
  if (baseline) {
    const double greedy_return = play(s_count).Return();
    ++r.evaluations;
    for (int64_t s = 0; s < s_count; ++s) gae.advantages[s] = rewards[s] - greedy_return;
  }
  r.advantages = std::move(gae.advantages);
  r.returns = std::move(gae.returns);
  return r;
}

GameRollout PpoLearner::CollectIterative(const GameEntry& entry, int32_t samples, bool greedy,
                                         std::mt19937_64& rng) {
  const PlacementGame& game = *entry.game;
  const int64_t n = game.num_groups(), d = game.num_actions(), s_count = greedy ? 1 : samples;
  torch::NoGradGuard no_grad;
  GameRollout r;
  r.entry = &entry;
  std::vector<PlacementState> states;
  r.episodes.resize(s_count);
  for (int64_t s = 0; s < s_count; ++s) {
    states.push_back(game.NewInitialState(rng()));
    r.episodes[s] = {states[s].placement(), states[s].penalised_time(), states[s].cost(), 0.0};
  }
  r.evaluations = s_count;
  const int64_t t_count = s_count * n;  // episode-major: index s * n + step
  std::vector<Observation> observations(t_count);
  r.masks = torch::empty({t_count, d}, torch::kBool);
  r.actions = torch::empty({t_count}, torch::kInt64);
  bool* msk = r.masks.data_ptr<bool>();
  int64_t* act = r.actions.data_ptr<int64_t>();
  torch::Tensor all_logits = torch::empty({t_count, d}, torch::kFloat32);
  std::vector<double> rewards(t_count), values(t_count);
  std::vector<uint8_t> dones(t_count, 0);
  for (int64_t step = 0; step < n; ++step) {
    std::vector<const Observation*> batch;
    for (int64_t s = 0; s < s_count; ++s) {
      states[s].FillObservation(&observations[s * n + step]);
      batch.push_back(&observations[s * n + step]);
    }
    IterativeOutput out = net_->placeto()->forward(StackObservations(batch), entry.tensors.graph.src,
                                                   entry.tensors.graph.dst);
    torch::Tensor logits = (out.logits / config_.temperature).contiguous();
    torch::Tensor step_values = out.values.to(torch::kFloat64).contiguous();
    const float* lp = logits.data_ptr<float>();
    const double* vp = step_values.data_ptr<double>();
    for (int64_t s = 0; s < s_count; ++s) {
      const int64_t t = s * n + step;
      std::copy(lp + s * d, lp + (s + 1) * d, all_logits.data_ptr<float>() + t * d);
      values[t] = vp[s];
      const std::vector<uint8_t>& mask = states[s].LegalActionsMask();
      for (int64_t k = 0; k < d; ++k) msk[t * d + k] = mask[k] != 0;
      const int32_t a = ChooseDevice(lp + s * d, mask.data(), static_cast<int32_t>(d), greedy, UniformUnit(rng));
      act[t] = a;
      Status applied = states[s].ApplyAction(a);
      DEVPLACE_CHECK(applied.ok(), applied.ok() ? "" : applied.error().message);
      rewards[t] = states[s].last_reward();
      dones[t] = states[s].IsTerminal() ? 1 : 0;
      EpisodeResult& e = r.episodes[s];
      e.episode_return = states[s].Return();
      if (states[s].penalised_time() < e.penalised_time)
        e = {states[s].placement(), states[s].penalised_time(), states[s].cost(), e.episode_return};
    }
    r.evaluations += s_count;
  }
  std::vector<const Observation*> all;
  for (const Observation& o : observations) all.push_back(&o);
  r.observations = StackObservations(all);
  r.old_logp = MaskedLogProbs(all_logits, r.masks).gather(1, r.actions.unsqueeze(1)).squeeze(1);
  GaeResult gae = ComputeGae(rewards, values, dones, 0.0, config_.gamma, config_.gae_lambda);
  r.values = std::move(values);
  r.advantages = std::move(gae.advantages);
  r.returns = std::move(gae.returns);
  return r;
}

PpoLoss PpoLearner::Loss(const GameRollout& r) const {
  torch::Tensor advantages = DoubleTensor(r.advantages), returns = DoubleTensor(r.returns);
  if (net_->is_transformer()) {
    OneShotOutput out = net_->transformer()->forward(r.entry->tensors);
    const int64_t s = r.actions.size(0), n = r.actions.size(1), d = out.logits.size(1);
    torch::Tensor logits = r.first_actions.defined()
                               ? net_->transformer()->Cohere(out.logits.unsqueeze(0).expand({s, n, d}),
                                                             r.first_actions, out, r.entry->tensors) /
                                     config_.temperature
                               : (out.logits / config_.temperature).unsqueeze(0).expand({s, n, d});
    torch::Tensor logp_all = MaskedLogProbs(logits, r.masks);
    torch::Tensor new_logp = logp_all.gather(2, r.actions.unsqueeze(2)).squeeze(2);
    torch::Tensor entropy = MaskedEntropy(logp_all);
    PpoLoss loss = ComputePpoLoss(new_logp.reshape({-1}), r.old_logp.reshape({-1}),
                                  advantages.unsqueeze(1).expand({s, n}).reshape({-1}), entropy.reshape({-1}),
                                  out.value.expand({s}), returns, config_);
    // Behaviour cloning: the demonstrated episode's actions, as a mean cross-entropy over its groups.
    const double coef = r.entry->demonstration_coef ? *r.entry->demonstration_coef : config_.demonstration_coef;
    const double weight = coef * demonstration_decay_;
    if (r.demonstrated && weight > 0) loss.total = loss.total - weight * new_logp[0].mean();
    return loss;
  }
  IterativeOutput out = net_->placeto()->forward(r.observations, r.entry->tensors.graph.src,
                                                 r.entry->tensors.graph.dst);
  torch::Tensor logp_all = MaskedLogProbs(out.logits / config_.temperature, r.masks);
  torch::Tensor new_logp = logp_all.gather(1, r.actions.unsqueeze(1)).squeeze(1);
  return ComputePpoLoss(new_logp, r.old_logp, advantages, MaskedEntropy(logp_all), out.values, returns, config_);
}

UpdateStats PpoLearner::Update(std::vector<GameRollout>& rollouts, int64_t iteration, std::mt19937_64& rng) {
  Expected<UpdateStats> stats = RunUpdate(rollouts, iteration, rng, nullptr);
  DEVPLACE_CHECK(stats.ok(), "a single-process update cannot fail");
  return *stats;
}

Status ShareRollouts(std::vector<GameRollout>* rollouts, const std::vector<const GameEntry*>& entries,
                     ProcessGroup& group) {
  DEVPLACE_CHECK(rollouts->size() == entries.size(), "one game per rollout");
  for (size_t k = 0; k < rollouts->size(); ++k) {
    const int32_t owner = static_cast<int32_t>(k % static_cast<size_t>(group.size()));
    GameRollout& r = (*rollouts)[k];
    DEVPLACE_CHECK((r.entry != nullptr) == (owner == group.rank()), "rank r holds rollouts r, r + W, ...");
    Expected<std::string> bytes = group.BroadcastBytes(owner == group.rank() ? PackRollout(r) : std::string(),
                                                       owner, "rollout exchange");
    if (!bytes) return bytes.error();
    if (owner != group.rank()) r = UnpackRollout(*bytes, entries[k]);
  }
  return Status::Ok();
}

Expected<UpdateStats> PpoLearner::UpdateInGroup(std::vector<GameRollout>& rollouts, int64_t iteration,
                                                std::mt19937_64& rng, ProcessGroup& group) {
  return RunUpdate(rollouts, iteration, rng, &group);
}

Expected<UpdateStats> PpoLearner::RunUpdate(std::vector<GameRollout>& rollouts, int64_t iteration,
                                            std::mt19937_64& rng, ProcessGroup* group) {
  DEVPLACE_CHECK(ensemble_.empty(), "an ensemble's rollouts are not the learner's policy's to update it with");
  UpdateStats stats;
  if (rollouts.empty()) return stats;
  for (auto& group_options : optimizer_->param_groups())
    static_cast<torch::optim::AdamOptions&>(group_options.options()).lr(LearningRate(iteration));
  demonstration_decay_ = 1.0 - Progress(iteration);
  std::vector<double> all;
  for (const GameRollout& r : rollouts) all.insert(all.end(), r.advantages.begin(), r.advantages.end());
  NormaliseAdvantages(&all);
  size_t next = 0;
  for (GameRollout& r : rollouts)
    for (double& a : r.advantages) a = all[next++];

  std::vector<size_t> order(rollouts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const size_t minibatches = std::min<size_t>(std::max(1, config_.minibatches), rollouts.size());
  int64_t updates = 0;
  double sums[5] = {0, 0, 0, 0, 0};  // policy, value, entropy, clip fraction, approx KL
  const std::vector<torch::Tensor> parameters = net_->module().parameters();
  for (int32_t epoch = 0; epoch < config_.epochs; ++epoch) {
    Shuffle(&order, rng);
    for (size_t m = 0; m < minibatches; ++m) {
      const size_t begin = m * order.size() / minibatches, end = (m + 1) * order.size() / minibatches;
      const double weight = 1.0 / static_cast<double>(end - begin);
      // In a group, rank r takes the minibatch's rollouts r, r + W, ...
      std::vector<size_t> mine;
      for (size_t i = begin; i < end; ++i)
        if (group == nullptr || static_cast<int32_t>((i - begin) % group->size()) == group->rank())
          mine.push_back(order[i]);
      // The games' gradients in parallel (autograd::grad leaves the shared parameters' .grad alone), summed into
      // .grad in minibatch order as the games finish, as one backward per game after another would accumulate them.
      optimizer_->zero_grad();
      std::vector<GameGradient> parts(mine.size());
      InOrderGradientSum sum(parameters, parts);
      RunParallel(mine.size(), threads_, [&](size_t j) {
        PpoLoss loss = Loss(rollouts[mine[j]]);
        parts[j].gradients = torch::autograd::grad({loss.total * weight}, parameters, {}, /*retain_graph=*/false,
                                                   /*create_graph=*/false, /*allow_unused=*/true);
        const double values[5] = {loss.policy.item<double>(), loss.value.item<double>(), loss.entropy.item<double>(),
                                  loss.clip_fraction, loss.approx_kl};
        for (int k = 0; k < 5; ++k) parts[j].stats[k] = values[k] * weight;
        sum.Done(j);
      });
      for (const GameGradient& part : parts)
        for (int k = 0; k < 5; ++k) sums[k] += part.stats[k];
      if (group != nullptr)
        if (Status s = SumGradients(parameters, *group); !s) return s.error();
      // max_grad_norm 0 disables clipping (the norm is still reported). Clipping and Adam run by parameter on the
      // threads, with the serial calls' result.
      stats.grad_norm +=
          ClipAndStepAdam(*optimizer_, parameters, config_.max_grad_norm > 0 ? config_.max_grad_norm : 1e30, threads_);
      ++updates;
    }
  }
  if (group != nullptr) {
    torch::Tensor t = torch::tensor(std::vector<double>(sums, sums + 5), torch::kFloat64);
    if (Status s = group->AllReduceSum(t, "loss statistics all-reduce"); !s) return s.error();
    for (int k = 0; k < 5; ++k) sums[k] = t[k].item<double>();
  }
  const double scale = 1.0 / static_cast<double>(updates);
  stats.policy_loss = sums[0] * scale;
  stats.value_loss = sums[1] * scale;
  stats.entropy = sums[2] * scale;
  stats.clip_fraction = sums[3] * scale;
  stats.approx_kl = sums[4] * scale;
  stats.grad_norm *= scale;
  return stats;
}

}  // namespace devplace
