#include "agents/learned/setup.h"

#include <cmath>
#include <sstream>

#include "agents/learned/learning.h"
#include "core/graph_json.h"
#include "core/topology_yaml.h"
#include "datasets/families.h"
#include "datasets/zoo.h"
#include "sim/cost_model.h"

namespace devplace {

Expected<EnvConfig> EnvConfigFromExperiment(const ExperimentEnv& env) {
  EnvConfig c;
  if (!ParseMdpKind(env.kind, &c.kind)) return Error{"env.kind: unknown MDP '" + env.kind + "'"};
  if (!ParseInitialPlacement(env.initial_placement, &c.initial_placement))
    return Error{"env.initial_placement: unknown value '" + env.initial_placement + "'"};
  c.oom_penalty = env.oom_penalty;
  c.memory_aware_mask = env.memory_aware_mask;
  c.data_parallel_action = env.data_parallel_action;
  c.sim.segment_bytes = env.segment_bytes;
  c.sim.max_segments = env.max_segments;
  c.sim.optimizer_state_factor = env.optimizer_state_factor;
  if (Status s = ValidateEnvConfig(c); !s) return s.error();
  return c;
}

Expected<Graph> BuildGraphSource(const GraphSource& source) {
  if (!source.family.empty()) return GenerateFamilyMember(source.family, source.seed, {source.target_ops});
  if (!source.zoo.empty()) return BuildZooModel(source.zoo, source.batch);
  return ReadGraphFile(source.file);
}

Expected<std::vector<LabelledGame>> MakeExperimentGames(const ExperimentConfig& config,
                                                        const std::vector<GraphSource>& graphs) {
  Expected<EnvConfig> env = EnvConfigFromExperiment(config.env);
  if (!env) return env.error();
  std::vector<std::shared_ptr<const Graph>> built;
  for (const GraphSource& source : graphs) {
    Expected<Graph> g = BuildGraphSource(source);
    if (!g) return Error{"graph " + source.label() + ": " + g.error().message};
    built.push_back(std::make_shared<const Graph>(std::move(g).value()));
  }
  std::vector<LabelledGame> games;
  for (const std::string& path : config.topologies) {
    Expected<Topology> t = ReadTopologyFile(path);
    if (!t) return t.error();
    if (t->num_devices() > config.policy.max_devices)
      return Error{path + ": " + std::to_string(t->num_devices()) + " devices, but policy.max_devices is " +
                   std::to_string(config.policy.max_devices)};
    auto topology = std::make_shared<const Topology>(std::move(t).value());
    for (size_t i = 0; i < built.size(); ++i) {
      auto game = PlacementGame::Create(built[i], topology, MakeAnalyticCostModel(), *env);
      if (!game) return Error{"graph " + graphs[i].label() + " on " + topology->name() + ": " + game.error().message};
      games.push_back({std::move(game).value(), graphs[i].label() + "@" + topology->name()});
    }
  }
  return games;
}

std::string TrainLogHeader() {
  return "iteration,mean_reward,mean_relative_time,best_relative_time,entropy,policy_loss,value_loss,"
         "clip_fraction,approx_kl,learning_rate,evaluations,heldout_relative_time,wall_seconds";
}

std::string TrainLogRow(const TrainIteration& it) {
  std::ostringstream row;
  row.precision(6);
  row << it.iteration << ',' << it.mean_reward << ',' << it.mean_relative_time << ',' << it.best_relative_time << ','
      << it.entropy << ',' << it.policy_loss << ',' << it.value_loss << ',' << it.clip_fraction << ','
      << it.approx_kl << ',' << it.learning_rate << ',' << it.evaluations << ',';
  if (it.heldout_relative_time > 0) row << it.heldout_relative_time;
  row << ',' << it.wall_seconds;
  return row.str();
}

}  // namespace devplace
