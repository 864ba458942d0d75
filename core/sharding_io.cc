#include "core/sharding_io.h"

#include "core/atomic_file.h"
#include "core/json_reader.h"
#include "core/sharding_json.h"

namespace devplace {

namespace {

Mesh ReadRequestMesh(const nlohmann::json& value, const std::string& source, const Topology& topology,
                     const std::vector<Mesh>& topology_meshes, const std::string& mesh_shape) {
  Mesh mesh;
  if (value.is_string()) {
    const std::string name = value.get<std::string>();
    auto it = std::find_if(topology_meshes.begin(), topology_meshes.end(), [&](const Mesh& m) { return m.name == name; });
    if (it == topology_meshes.end())
      FailAt(source, "mesh", "topology '" + topology.name() + "' declares no mesh named '" + name + "'");
    mesh = *it;
  } else {
    mesh = ReadMeshJson(value, source, "mesh", topology, /*devices_optional=*/true);
  }
  if (mesh_shape.empty()) return mesh;
  Expected<Mesh> reshaped = MeshFromShorthand(mesh_shape, mesh.axes, topology, mesh.name);
  if (!reshaped.ok()) FailAt(source, "mesh", "--mesh " + reshaped.error().message);
  return *reshaped;
}

// `zero: AXIS` (stage 1) or `zero: {axis: AXIS, stage: 1 | 3}`.
void ReadZero(const nlohmann::json& value, const std::string& source, ShardingRequest* request) {
  std::string axis, path = "zero";
  if (value.is_object()) {
    JsonObject zero(value, source, "zero");
    axis = zero.string("axis");
    path = zero.path_of("axis");
    request->zero_stage = static_cast<int32_t>(zero.integer_or("stage", 1, 1, 3));
    if (request->zero_stage == 2) zero.fail("stage", "stage 2 is not supported (give 1 or 3)");
    zero.finish();
  } else {
    axis = ReadString(value, source, "zero");
  }
  request->zero_axis = request->mesh.find_axis(axis);
  if (request->zero_axis < 0) FailAt(source, path, "unknown mesh axis '" + axis + "'");
}

}  // namespace

Expected<ShardingRequest> ShardingRequestFromYaml(const std::string& text, const std::string& source,
                                                  const Topology& topology, const std::vector<Mesh>& topology_meshes,
                                                  const std::string& mesh_shape) {
  return CatchInputErrors<ShardingRequest>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    root.string_or("description", "");
    ShardingRequest request;
    request.mesh = ReadRequestMesh(root.required("mesh"), source, topology, topology_meshes, mesh_shape);
    const nlohmann::json& list = RequireArray(root.required("annotations"), source, "annotations");
    if (list.empty()) FailAt(source, "annotations", "needs at least one annotation");
    for (size_t i = 0; i < list.size(); ++i)
      ReadAnnotation(list[i], source, "annotations[" + std::to_string(i) + "]", request.mesh, &request.annotations);
    if (const nlohmann::json* zero = root.optional("zero")) ReadZero(*zero, source, &request);
    root.finish();
    return request;
  });
}

Expected<ShardingRequest> ReadShardingRequestFile(const std::string& path, const Topology& topology,
                                                  const std::vector<Mesh>& topology_meshes,
                                                  const std::string& mesh_shape) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return ShardingRequestFromYaml(*text, path, topology, topology_meshes, mesh_shape);
}

}  // namespace devplace
