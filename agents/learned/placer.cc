// LearnedPolicy: zero-shot placement and budgeted fine-tuning with a trained policy.
#include <chrono>
#include <cmath>
#include <limits>

#include "agents/learned/checkpoint.h"
#include "agents/learned/demonstration.h"
#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "agents/learned/setup.h"

namespace devplace {

struct LearnedPolicy::Impl {
  ExperimentConfig experiment;
  CheckpointMeta meta;
  std::unique_ptr<PolicyNet> net;
};

LearnedPolicy::LearnedPolicy(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LearnedPolicy::~LearnedPolicy() = default;

const ExperimentConfig& LearnedPolicy::experiment() const { return impl_->experiment; }
int64_t LearnedPolicy::trained_iterations() const { return impl_->meta.iteration; }

std::string DefaultPolicyDir() { return DEVPLACE_MODELS_DIR "/soap-context"; }

Expected<std::unique_ptr<LearnedPolicy>> LearnedPolicy::Load(const std::string& checkpoint_dir) {
  auto impl = std::make_unique<Impl>();
  Expected<CheckpointMeta> meta = ReadCheckpointMeta(checkpoint_dir);
  if (!meta) return meta.error();
  impl->meta = std::move(meta).value();
  Expected<ExperimentConfig> config =
      ExperimentConfigFromYaml(impl->meta.config_yaml, checkpoint_dir + "/state.json:config_yaml", impl->meta.base_dir);
  if (!config) return config.error();
  impl->experiment = std::move(config).value();
  impl->net = std::make_unique<PolicyNet>(impl->experiment.policy, impl->experiment.seed);
  if (Status s = LoadCheckpointTensors(checkpoint_dir, impl->meta, *impl->net, nullptr); !s) return s.error();
  return std::unique_ptr<LearnedPolicy>(new LearnedPolicy(std::move(impl)));
}

Expected<PlaceResult> LearnedPolicy::Place(const Graph& graph, const Topology& topology, const CostModel& cost,
                                           const SimOptions& sim, const PlaceOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(); };
  const ExperimentConfig& exp = impl_->experiment;
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
    PpoLearner zero_shot(impl_->net.get(), exp.ppo, 1);
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
    PpoLearner sampler(impl_->net.get(), sampling, 1);
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
    if (fastest >= 0) {
      EpisodeResult uniform;
      uniform.placement = game.UniformPlacement(fastest);
      Expected<SimResult> sim = game.Evaluate(uniform.placement);
      if (!sim) return sim.error();
      ++result.evaluations;
      uniform.cost = CostOf(*sim, game.topology());
      result.uniform_step_time = uniform.cost.step_time;
      if (uniform.cost < best.cost) best = std::move(uniform);
    }
  }
  if (options.finetune_evaluations > 0) {
    std::unique_ptr<PolicyNet> net = impl_->net->Clone();
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
