#include "core/sharding_json.h"

#include "core/json_reader.h"
#include "core/mesh_layout.h"

namespace devplace {

Mesh ReadMeshJson(const nlohmann::json& value, const std::string& source, const std::string& path,
                  const Topology& topology, bool devices_optional) {
  JsonObject obj(value, source, path);
  Mesh mesh;
  mesh.name = obj.string_or("name", "mesh");
  const nlohmann::json& shape = RequireArray(obj.required("shape"), source, obj.path_of("shape"));
  for (size_t i = 0; i < shape.size(); ++i)
    mesh.shape.push_back(ReadInteger(shape[i], source, obj.path_of("shape") + "[" + std::to_string(i) + "]", 1, 65536));
  const nlohmann::json& axes = RequireArray(obj.required("axes"), source, obj.path_of("axes"));
  for (size_t i = 0; i < axes.size(); ++i)
    mesh.axes.push_back(ReadString(axes[i], source, obj.path_of("axes") + "[" + std::to_string(i) + "]"));
  if (const nlohmann::json* devices = devices_optional ? obj.optional("devices") : &obj.required("devices")) {
    RequireArray(*devices, source, obj.path_of("devices"));
    for (size_t i = 0; i < devices->size(); ++i) {
      const std::string dpath = obj.path_of("devices") + "[" + std::to_string(i) + "]";
      const std::string name = ReadString((*devices)[i], source, dpath);
      const DeviceId d = topology.find_device(name);
      if (d < 0) FailAt(source, dpath, "unknown device '" + name + "' (topology '" + topology.name() + "')");
      mesh.devices.push_back(d);
    }
  } else {
    if (mesh.size() > topology.num_devices())
      obj.fail("shape", FormatShape(mesh.shape) + " needs " + std::to_string(mesh.size()) + " devices but topology '" +
                            topology.name() + "' has " + std::to_string(topology.num_devices()));
    mesh.devices = DefaultMeshDevices(topology, mesh.shape);
  }
  obj.finish();
  if (Status st = ValidateMesh(mesh, topology); !st.ok()) {
    // ValidateMesh says "mesh 'n': <field>: <reason>"; report it at this object's path.
    const std::string rest = st.error().message.substr(("mesh '" + mesh.name + "': ").size());
    const size_t colon = rest.find(": ");
    FailAt(source, path + "." + rest.substr(0, colon), rest.substr(colon + 2));
  }
  return mesh;
}

nlohmann::json MeshToJson(const Mesh& mesh, const Topology& topology) {
  nlohmann::json devices = nlohmann::json::array();
  for (DeviceId d : mesh.devices) devices.push_back(topology.device(d).name);
  return {{"name", mesh.name}, {"shape", mesh.shape}, {"axes", mesh.axes}, {"devices", std::move(devices)}};
}

namespace {

// One entry of a spec: null / [] (none), "axis", or ["a", "b"].
std::vector<int32_t> ReadAxes(const nlohmann::json& value, const std::string& source, const std::string& path,
                              const Mesh& mesh, std::vector<char>* used) {
  std::vector<int32_t> axes;
  auto add = [&](const nlohmann::json& v, const std::string& p) {
    const std::string name = ReadString(v, source, p);
    const int32_t a = mesh.find_axis(name);
    if (a < 0) {
      std::string known;
      for (const std::string& n : mesh.axes) known += (known.empty() ? "" : ", ") + n;
      FailAt(source, p, "unknown mesh axis '" + name + "' (mesh '" + mesh.name + "' has " + known + ")");
    }
    if ((*used)[a]) FailAt(source, p, "mesh axis '" + name + "' is used twice in one spec");
    (*used)[a] = 1;
    axes.push_back(a);
  };
  if (value.is_null()) return axes;
  if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i) add(value[i], path + "[" + std::to_string(i) + "]");
  } else {
    add(value, path);
  }
  return axes;
}

nlohmann::json AxesJson(const std::vector<int32_t>& axes, const Mesh& mesh) {
  if (axes.empty()) return nullptr;
  if (axes.size() == 1) return mesh.axes[axes[0]];
  nlohmann::json list = nlohmann::json::array();
  for (int32_t a : axes) list.push_back(mesh.axes[a]);
  return list;
}

}  // namespace

ShardingSpec ReadSpecJson(const nlohmann::json& dims, const std::string& path, const nlohmann::json* partial,
                          const std::string& partial_path, const std::string& source, const Mesh& mesh) {
  ShardingSpec spec;
  std::vector<char> used(static_cast<size_t>(mesh.rank()), 0);
  RequireArray(dims, source, path);
  for (size_t i = 0; i < dims.size(); ++i)
    spec.dims.push_back(ReadAxes(dims[i], source, path + "[" + std::to_string(i) + "]", mesh, &used));
  if (partial != nullptr) spec.partial = ReadAxes(*partial, source, partial_path, mesh, &used);
  return spec;
}

nlohmann::json SpecDimsToJson(const ShardingSpec& spec, const Mesh& mesh) {
  nlohmann::json dims = nlohmann::json::array();
  for (const auto& axes : spec.dims) dims.push_back(AxesJson(axes, mesh));
  return dims;
}

nlohmann::json SpecPartialToJson(const ShardingSpec& spec, const Mesh& mesh) {
  nlohmann::json list = nlohmann::json::array();
  for (int32_t a : spec.partial) list.push_back(mesh.axes[a]);
  return list;
}

void ReadAnnotation(const nlohmann::json& value, const std::string& source, const std::string& path, const Mesh& mesh,
                    std::vector<ShardingAnnotation>* out) {
  JsonObject obj(value, source, path);
  ShardingAnnotation ann;
  ann.spec = ReadSpecJson(obj.required("spec"), obj.path_of("spec"), obj.optional("partial"), obj.path_of("partial"),
                          source, mesh);
  ann.allow_padding = obj.boolean_or("pad", false);
  const nlohmann::json& ops = obj.required("ops");
  if (ops.is_array()) {
    if (ops.empty()) obj.fail("ops", "needs at least one pattern");
    for (size_t j = 0; j < ops.size(); ++j) {
      const std::string p = obj.path_of("ops") + "[" + std::to_string(j) + "]";
      ann.pattern = ReadString(ops[j], source, p);
      ann.origin = source + ": " + p;
      out->push_back(ann);
    }
  } else {
    ann.pattern = ReadString(ops, source, obj.path_of("ops"));
    ann.origin = source + ": " + path;
    out->push_back(ann);
  }
  obj.finish();
}

}  // namespace devplace
