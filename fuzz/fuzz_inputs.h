// The graph and machine that the strategy and sharding-spec fuzz targets read their inputs against: the zoo's
// transformer_xl4 at batch 32 ("transformer_xl4-b32", 183 ops) on configs/topologies/v100-2x4-eth.yaml (read from
// the source tree, DEVPLACE_SOURCE_DIR), with the meshes that file declares. Built once; traps if they do not load.
#pragma once

#include <vector>

#include "core/atomic_file.h"
#include "core/mesh.h"
#include "core/topology_yaml.h"
#include "datasets/zoo.h"

namespace devplace::fuzz {

struct FuzzInputs {
  Graph graph;
  Topology topology;
  std::vector<Mesh> meshes;
};

inline const FuzzInputs& Inputs() {
  static const FuzzInputs inputs = [] {
    const std::string path = std::string(DEVPLACE_SOURCE_DIR) + "/configs/topologies/v100-2x4-eth.yaml";
    Expected<Graph> graph = BuildZooModel("transformer_xl4", 32);
    Expected<std::string> text = ReadFile(path);
    if (!graph.ok() || !text.ok()) __builtin_trap();
    Expected<Topology> topology = TopologyFromYaml(*text, path);
    if (!topology.ok()) __builtin_trap();
    Expected<std::vector<Mesh>> meshes = MeshesFromYaml(*text, path, *topology);
    if (!meshes.ok()) __builtin_trap();
    return FuzzInputs{std::move(graph).value(), std::move(topology).value(), std::move(meshes).value()};
  }();
  return inputs;
}

}  // namespace devplace::fuzz
