// JSON forms of meshes and sharding specs shared by core's readers and writers (topology YAML `meshes:`, sharding
// spec files, the sharded strategy form). Internal to core: it exposes nlohmann::json; other libraries use the
// public readers in core/mesh.h, core/sharding_io.h and core/strategy_json.h.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "core/mesh.h"
#include "core/sharding.h"
#include "core/sharding_propagation.h"
#include "core/topology.h"

namespace devplace {

// Reads {name (default "mesh"), shape, axes, devices} at `path` (devices: names in `topology`; absent: the topology's first
// prod(shape) devices laid out over fast links, DefaultMeshDevices in core/mesh_layout.h, when `devices_optional`). Validates it (ValidateMesh); throws InputError naming
// "<source>: <path>.<field>: <reason>".
Mesh ReadMeshJson(const nlohmann::json& value, const std::string& source, const std::string& path,
                  const Topology& topology, bool devices_optional);
nlohmann::json MeshToJson(const Mesh& mesh, const Topology& topology);

// Reads a spec: `dims` (at `path`) is a list with one entry per tensor axis, each null or [] (replicated), an axis
// name, or a list of axis names (major to minor); `partial` (at `partial_path`; may be nullptr) an axis name or a
// list of them. Axis names must be axes of `mesh` and used at most once in the whole spec. Throws InputError
// naming the entry's path.
ShardingSpec ReadSpecJson(const nlohmann::json& dims, const std::string& path, const nlohmann::json* partial,
                          const std::string& partial_path, const std::string& source, const Mesh& mesh);
// The canonical `dims` list (null, "axis" or ["a", "b"] per axis) and the `partial` list of `spec`.
nlohmann::json SpecDimsToJson(const ShardingSpec& spec, const Mesh& mesh);

// Reads one annotation {ops: pattern or [patterns], spec, partial?, pad?} at `path` on `mesh`, appending one
// ShardingAnnotation per pattern (origin "<source>: <path>" or "<source>: <path>.ops[j]"). Throws InputError naming
// the field.
void ReadAnnotation(const nlohmann::json& value, const std::string& source, const std::string& path, const Mesh& mesh,
                    std::vector<ShardingAnnotation>* out);
nlohmann::json SpecPartialToJson(const ShardingSpec& spec, const Mesh& mesh);

}  // namespace devplace
