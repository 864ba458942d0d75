// Sharding spec files (YAML, docs/formats.md "Sharding spec"): the mesh to shard over and a few annotations
// (op name patterns -> spec), the input of `devplace shard`.
#pragma once

#include <string>
#include <vector>

#include "core/mesh.h"
#include "core/sharding_propagation.h"
#include "core/status.h"
#include "core/topology.h"

namespace devplace {

// A parsed spec file.
struct ShardingRequest {
  Mesh mesh;
  std::vector<ShardingAnnotation> annotations;  // origins read "<source>: annotations[i]" (".ops[j]" for lists)
  // `zero: AXIS` or `zero: {axis: AXIS, stage: S}`: the mesh axis that also shards weight updates (ZeRO), -1
  // when absent; the stage: 1 (optimizer state sharded, the default) or 3 (weights and gradients too).
  int32_t zero_axis = -1;
  int32_t zero_stage = 1;
  // The axis that shards weights and gradients (LowerSpecs' weight_shard_axis): zero_axis at stage 3, else -1.
  int32_t weight_shard_axis() const { return zero_stage == 3 ? zero_axis : -1; }
};

// Parses a spec file. `mesh: NAME` picks one of `topology_meshes` (the meshes its topology file declares);
// `mesh: {shape, axes[, name, devices]}` declares one (devices default to the topology's first ones, laid out
// so that every axis's collectives run over fast links: DefaultMeshDevices, core/mesh_layout.h; a `devices` list is
// kept as written). A non-empty `mesh_shape` ("2x4", the CLI's --mesh) replaces the mesh's shape, keeping its axis
// names, laid out the same way over the topology's first devices. Errors read "<source>: <field path>: <reason>" and name the annotation.
Expected<ShardingRequest> ShardingRequestFromYaml(const std::string& text, const std::string& source,
                                                  const Topology& topology, const std::vector<Mesh>& topology_meshes,
                                                  const std::string& mesh_shape = "");
Expected<ShardingRequest> ReadShardingRequestFile(const std::string& path, const Topology& topology,
                                                  const std::vector<Mesh>& topology_meshes,
                                                  const std::string& mesh_shape = "");

}  // namespace devplace
