// LearnedPolicy: zero-shot placement and budgeted fine-tuning with a trained policy.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "agents/learned/checkpoint.h"
#include "agents/learned/demonstration.h"
#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "agents/learned/setup.h"
#include "core/atomic_file.h"
#include "core/parallel.h"

namespace devplace {

namespace {

// A loaded checkpoint, or an ensemble's first member with the others' parameters.
struct LoadedPolicy {
  ExperimentConfig experiment;  // the (first) member's
  CheckpointMeta meta;
  std::unique_ptr<PolicyNet> net;
  std::vector<std::unique_ptr<PolicyNet>> others;  // an ensemble's other members (empty: one policy)
};

// One checkpoint directory's experiment, meta and parameters.
Expected<LoadedPolicy> LoadCheckpoint(const std::string& checkpoint_dir) {
  LoadedPolicy loaded;
  Expected<CheckpointMeta> meta = ReadCheckpointMeta(checkpoint_dir);
  if (!meta) return meta.error();
  loaded.meta = std::move(meta).value();
  Expected<ExperimentConfig> config = ExperimentConfigFromYaml(
      loaded.meta.config_yaml, checkpoint_dir + "/state.json:config_yaml", loaded.meta.base_dir);
  if (!config) return config.error();
  loaded.experiment = std::move(config).value();
  loaded.net = std::make_unique<PolicyNet>(loaded.experiment.policy, loaded.experiment.seed);
  if (Status s = LoadCheckpointTensors(checkpoint_dir, loaded.meta, *loaded.net, nullptr); !s) return s.error();
  return loaded;
}

// Whether two experiments build the same placement games and the same policy inputs: an ensemble's members
// decode from one game's tensors.
bool SameGamesAndInputs(const ExperimentConfig& a, const ExperimentConfig& b) {
  const EnvConfig &x = a.env, &y = b.env;
  return a.policy == b.policy && x.kind == y.kind && x.initial_placement == y.initial_placement &&
         x.oom_penalty == y.oom_penalty && x.memory_aware_mask == y.memory_aware_mask &&
         x.data_parallel_action == y.data_parallel_action && x.action_space == y.action_space &&
         x.star_reshard == y.star_reshard && a.ppo.temperature == b.ppo.temperature;
}

// The ensemble `dir`/ensemble.json names: its first member's experiment and parameters, the others' parameters.
Expected<LoadedPolicy> LoadEnsemble(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "ensemble.json").string();
  Expected<std::string> text = ReadFile(path);
  if (!text) return text.error();
  Expected<EnsembleMeta> ensemble = EnsembleMetaFromJson(*text, path);
  if (!ensemble) return ensemble.error();
  LoadedPolicy first;
  for (size_t i = 0; i < ensemble->members.size(); ++i) {
    const std::string where = path + ": members[" + std::to_string(i) + "]: ";
    Expected<LoadedPolicy> member = LoadCheckpoint((std::filesystem::path(dir) / ensemble->members[i]).string());
    if (!member) return Error{where + member.error().message};
    if (i == 0) {
      if (!member->net->is_transformer())
        return Error{where + "a " + member->experiment.policy.kind +
                     " policy; an ensemble decodes the one-shot MDP (transformer policies) only"};
      first = std::move(member).value();
    } else if (!SameGamesAndInputs(first.experiment, member->experiment)) {
      return Error{where + "its policy, env or ppo.temperature differ from members[0]'s (an ensemble's members " +
                   "must read the same inputs)"};
    } else {
      first.others.push_back(std::move(member->net));
    }
  }
  return first;
}


}  // namespace

struct LearnedPolicy::Impl {
  LoadedPolicy policy;

  explicit Impl(LoadedPolicy loaded) : policy(std::move(loaded)) {}
  // The ensemble's other members, for PpoLearner::set_ensemble.
  std::vector<PolicyNet*> ensemble() const {
    std::vector<PolicyNet*> nets;
    for (const auto& other : policy.others) nets.push_back(other.get());
    return nets;
  }
};

LearnedPolicy::LearnedPolicy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LearnedPolicy::~LearnedPolicy() = default;

const ExperimentConfig& LearnedPolicy::experiment() const { return impl_->policy.experiment; }
int64_t LearnedPolicy::trained_iterations() const { return impl_->policy.meta.iteration; }

std::string DefaultPolicyDir() { return DEVPLACE_MODELS_DIR "/soap-context"; }

Expected<std::unique_ptr<LearnedPolicy>> LearnedPolicy::Load(const std::string& policy_dir) {
  std::error_code ec;
  const bool ensemble = std::filesystem::exists(std::filesystem::path(policy_dir) / "ensemble.json", ec);
  Expected<LoadedPolicy> loaded = ensemble ? LoadEnsemble(policy_dir) : LoadCheckpoint(policy_dir);
  if (!loaded) return loaded.error();
  return std::unique_ptr<LearnedPolicy>(new LearnedPolicy(std::make_unique<Impl>(std::move(loaded).value())));
}

int32_t LearnedPolicy::ensemble_size() const { return 1 + static_cast<int32_t>(impl_->policy.others.size()); }

Expected<PlaceResult> LearnedPolicy::Place(const Graph& graph, const Topology& topology, const CostModel& cost,
                                           const SimOptions& sim, const PlaceOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  const ExperimentConfig& exp = impl_->policy.experiment;
  if (topology.num_devices() > exp.policy.max_devices)
    return Error{"topology '" + topology.name() + "' has " + std::to_string(topology.num_devices()) +
                 " devices; this policy places on at most " + std::to_string(exp.policy.max_devices)};
  if (options.coherence_passes > 0 && !exp.policy.coherence)
    return Error{"coherence passes: this policy has no coherence pass (policy.coherence)"};
  if (options.coherence_passes > 8) return Error{"coherence passes: must be in [1, 8]"};
  EnvConfig env = exp.env;
  env.sim = sim;
  if (!options.meshes.empty() && env.action_space != ActionSpace::kSoap)
    return Error{"meshes: this policy's action space is '" + std::string(ToString(env.action_space)) +
                 "'; only a soap policy splits over mesh axes"};
  env.meshes = options.meshes;  // the target topology's, never the training topologies'
  // Non-owning handles: the game lives only inside this call.
  std::shared_ptr<const Graph> g(std::shared_ptr<const Graph>{}, &graph);
  std::shared_ptr<const Topology> t(std::shared_ptr<const Topology>{}, &topology);
  Expected<std::shared_ptr<const PlacementGame>> game = PlacementGame::Create(g, t, cost, env);
  if (!game) return game.error();
  SetPolicyThreads(exp.threads);
  GameEntry entry = MakeGameEntry(std::move(game).value(), graph.name());

  if (Status s = AddPolicyInputs(exp.policy, *entry.game, &entry.tensors); !s) return s.error();

  auto passes = [&](PpoLearner& learner) {
    if (options.coherence_passes > 0) learner.set_coherence_passes(options.coherence_passes);
  };
  PlaceResult result;
  result.num_groups = entry.game->num_groups();
  result.num_actions = entry.game->num_actions();
  std::mt19937_64 rng(options.seed);
  EpisodeResult best;
  {
    PpoLearner zero_shot(impl_->policy.net.get(), exp.ppo, 1);
    zero_shot.set_ensemble(impl_->ensemble(), HardwareThreads());  // the decoding does not depend on it
    passes(zero_shot);
    GameRollout r = zero_shot.Collect(entry, 1, /*greedy=*/true, rng);
    best = r.episodes[0];
    result.evaluations += r.evaluations;
    result.zero_shot_step_time = best.cost.step_time;
    result.zero_shot_oom = best.cost.oom;
  }
  if (options.samples > 0) {
    PpoConfig sampling = exp.ppo;
    if (options.sample_temperature > 0) sampling.temperature = options.sample_temperature;
    PpoLearner sampler(impl_->policy.net.get(), sampling, 1);
    sampler.set_ensemble(impl_->ensemble(), HardwareThreads());  // the decoding does not depend on it
    passes(sampler);
    GameRollout r = sampler.Collect(entry, options.samples, /*greedy=*/false, rng);
    result.evaluations += r.evaluations;
    for (const EpisodeResult& e : r.episodes)
      if (e.cost < best.cost) best = e;  // the searches' ranking: fits first, then faster
    result.sampled_step_time = best.cost.step_time;
    result.sampled_oom = best.cost.oom;
  }
  if (options.uniform) {
    const PlacementGame& game = *entry.game;
    int32_t fastest = -1;
    for (int32_t c = 0; c < game.num_candidates(); ++c)
      if (game.uniform_step_time(c) > 0 && (fastest < 0 || game.uniform_step_time(c) < game.uniform_step_time(fastest)))
        fastest = c;
    if (fastest >= 0) {  // simulated when the game was created: no evaluation here
      EpisodeResult uniform;
      uniform.placement = game.UniformPlacement(fastest);
      uniform.cost = game.uniform_cost(fastest);
      result.uniform_step_time = uniform.cost.step_time;
      if (uniform.cost < best.cost) best = std::move(uniform);
    }
  }
  if (options.finetune_evaluations > 0) {
    std::unique_ptr<PolicyNet> net = impl_->policy.net->Clone();
    PpoConfig ppo = exp.ppo;
    ppo.lr = ppo.lr_final = options.finetune_lr > 0 ? options.finetune_lr : exp.ppo.lr;
    if (options.finetune_temperature > 0) ppo.temperature = options.finetune_temperature;
    const int32_t samples = options.finetune_samples > 0 ? options.finetune_samples : exp.ppo.samples_per_graph;
    const int64_t per_episode = net->is_transformer() ? 1 : entry.game->num_groups() + 1;
    PpoLearner learner(net.get(), ppo, 1);
    passes(learner);
    // A policy trained with demonstrations fine-tunes with them too: their searches cost one evaluation each.
    if (net->is_transformer() && !exp.ppo.demonstrations.empty() &&
        options.finetune_evaluations - result.evaluations >= static_cast<int64_t>(exp.ppo.demonstrations.size()) + 2) {
      Expected<Demonstration> d = MakeDemonstration(*entry.game, exp.ppo.demonstrations, options.seed);
      if (!d) return d.error();
      result.evaluations += static_cast<int64_t>(exp.ppo.demonstrations.size());
      entry.demonstration = std::move(d->device_per_group);
    }
    for (int64_t iteration = 0;; ++iteration) {
      const int64_t left = options.finetune_evaluations - result.evaluations;
      const int64_t episodes = std::min<int64_t>(samples, left / per_episode);
      if (episodes < 2) break;  // one episode gives no advantage signal
      if (options.max_seconds > 0 && seconds() >= options.max_seconds) break;
      std::vector<GameRollout> rollouts;
      rollouts.push_back(learner.Collect(entry, static_cast<int32_t>(episodes), false, rng));
      result.evaluations += rollouts[0].evaluations;
      for (const EpisodeResult& e : rollouts[0].episodes)
        if (e.cost < best.cost) best = e;  // the searches' ranking: fits first, then faster
      learner.Update(rollouts, iteration, rng);
      if (options.progress) options.progress(result.evaluations, best.cost.step_time);
    }
  }
  result.strategy = entry.game->StrategyFromGroups(best.placement);
  result.step_time = best.cost.step_time;
  result.oom = best.cost.oom;
  result.seconds = seconds();
  return result;
}

}  // namespace devplace
