#include "agents/learned/setup.h"

#include <cmath>
#include <sstream>

#include "agents/learned/learning.h"
#include "core/mesh.h"
#include "core/topology_yaml.h"
#include "datasets/graph_source.h"
#include "sim/cost_model.h"

namespace devplace {

Expected<std::vector<LabelledGame>> MakeExperimentGames(const ExperimentConfig& config,
                                                        const std::vector<GraphSource>& graphs) {
  if (Status s = ValidateEnvConfig(config.env); !s) return s.error();
  std::vector<std::shared_ptr<const Graph>> built;
  for (const GraphSource& source : graphs) {
    Expected<Graph> g = BuildGraph(source);
    if (!g) return g.error();
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
    EnvConfig env = config.env;
    if (env.action_space == ActionSpace::kSoap) {
      // The topology's declared meshes add their axes' device lines to the SOAP candidates.
      Expected<std::vector<Mesh>> meshes = ReadTopologyMeshes(path, *topology);
      if (!meshes) return meshes.error();
      env.meshes = std::move(meshes).value();
    }
    for (size_t i = 0; i < built.size(); ++i) {
      auto game = PlacementGame::Create(built[i], topology, MakeAnalyticCostModel(), env);
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
