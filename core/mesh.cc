#include "core/mesh.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <set>

#include "core/atomic_file.h"
#include "core/check.h"
#include "core/json_reader.h"
#include "core/mesh_layout.h"
#include "core/sharding_json.h"

namespace devplace {

int64_t Mesh::size() const {
  int64_t n = 1;
  for (int64_t s : shape) {
    if (s > 0 && n > std::numeric_limits<int64_t>::max() / s) return std::numeric_limits<int64_t>::max();
    n *= s;
  }
  return n;
}

int32_t Mesh::find_axis(std::string_view axis) const {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == axis) return static_cast<int32_t>(i);
  return -1;
}

DeviceId Mesh::device_at(const std::vector<int64_t>& coords) const {
  DEVPLACE_CHECK(coords.size() == shape.size(), "mesh coordinates of the wrong rank");
  int64_t flat = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    DEVPLACE_CHECK(coords[i] >= 0 && coords[i] < shape[i], "mesh coordinate out of range");
    flat = flat * shape[i] + coords[i];
  }
  return devices[flat];
}

std::vector<int64_t> Mesh::coords_of(int64_t flat) const {
  std::vector<int64_t> coords(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    coords[i] = flat % shape[i];
    flat /= shape[i];
  }
  return coords;
}

std::string FormatShape(const std::vector<int64_t>& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

Status ValidateMesh(const Mesh& mesh, const Topology& topology) {
  auto err = [&](const std::string& field, const std::string& what) {
    return Error{"mesh '" + mesh.name + "': " + field + ": " + what};
  };
  if (mesh.shape.empty()) return err("shape", "needs at least one axis");
  if (mesh.axes.size() != mesh.shape.size())
    return err("axes", "names " + std::to_string(mesh.axes.size()) + " axes but the shape has " +
                           std::to_string(mesh.shape.size()));
  std::set<std::string> names;
  for (size_t i = 0; i < mesh.shape.size(); ++i) {
    if (mesh.shape[i] < 1) return err("shape", "extents must be >= 1, got " + FormatShape(mesh.shape));
    if (mesh.axes[i].empty()) return err("axes", "axis names must not be empty");
    if (!names.insert(mesh.axes[i]).second) return err("axes", "axis '" + mesh.axes[i] + "' is named twice");
  }
  if (mesh.size() != static_cast<int64_t>(mesh.devices.size()))
    return err("devices", "shape " + FormatShape(mesh.shape) + " has " + std::to_string(mesh.size()) +
                              " positions but " + std::to_string(mesh.devices.size()) + " devices are given");
  std::vector<char> used(static_cast<size_t>(topology.num_devices()), 0);
  for (DeviceId d : mesh.devices) {
    if (d < 0 || d >= topology.num_devices())
      return err("devices", "device " + std::to_string(d) + " is not in topology '" + topology.name() + "'");
    if (used[d]) return err("devices", "device '" + topology.device(d).name + "' appears twice");
    used[d] = 1;
  }
  return Status::Ok();
}

Expected<Mesh> ParseMeshShorthand(std::string_view shorthand, const std::vector<std::string>& axes, std::string name) {
  Mesh mesh;
  mesh.name = std::move(name);
  const std::string text(shorthand);
  for (size_t pos = 0; pos <= text.size();) {
    size_t end = text.find('x', pos);
    if (end == std::string::npos) end = text.size();
    int64_t extent = 0;
    auto [ptr, ec] = std::from_chars(text.data() + pos, text.data() + end, extent);
    if (ec != std::errc() || ptr != text.data() + end || extent < 1 || extent > 65536)
      return Error{"mesh '" + text + "': expected extents >= 1 separated by 'x', e.g. 2x4"};
    mesh.shape.push_back(extent);
    pos = end + 1;
  }
  mesh.axes = axes;
  if (mesh.axes.empty()) {
    if (mesh.shape.size() == 1) mesh.axes = {"data"};
    else if (mesh.shape.size() == 2) mesh.axes = {"data", "model"};
    else
      for (size_t i = 0; i < mesh.shape.size(); ++i) mesh.axes.push_back(std::string(1, 'a').append(std::to_string(i)));
  }
  if (mesh.axes.size() != mesh.shape.size())
    return Error{"mesh '" + text + "': has " + std::to_string(mesh.shape.size()) + " axes but " +
                 std::to_string(mesh.axes.size()) + " axis names are given"};
  return mesh;
}

Expected<Mesh> ParseMeshShorthandFor(std::string_view shorthand, const std::vector<std::string>& axes,
                                    const Topology& topology, std::string name) {
  Expected<Mesh> mesh = ParseMeshShorthand(shorthand, axes, std::move(name));
  if (!mesh.ok()) return mesh.error();
  if (mesh->size() > topology.num_devices())
    return Error{"mesh '" + std::string(shorthand) + "': needs " + std::to_string(mesh->size()) +
                 " devices but topology '" + topology.name() + "' has " + std::to_string(topology.num_devices())};
  return mesh;
}

Expected<Mesh> MeshFromShorthand(std::string_view shorthand, const std::vector<std::string>& axes,
                                 const Topology& topology, std::string name) {
  Expected<Mesh> mesh = ParseMeshShorthandFor(shorthand, axes, topology, std::move(name));
  if (!mesh.ok()) return mesh.error();
  mesh->devices = DefaultMeshDevices(topology, mesh->shape);
  if (Status st = ValidateMesh(*mesh, topology); !st.ok()) return st.error();
  return mesh;
}

Expected<Mesh> SliceMesh(const Mesh& mesh, std::string_view axis, int64_t begin, int64_t end, std::string name) {
  const int32_t a = mesh.find_axis(axis);
  if (a < 0) return Error{"mesh '" + mesh.name + "' has no axis '" + std::string(axis) + "'"};
  if (begin < 0 || end > mesh.shape[a] || begin >= end)
    return Error{"mesh '" + mesh.name + "': slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                 ") of axis '" + std::string(axis) + "' (extent " + std::to_string(mesh.shape[a]) + ") is empty or out of range"};
  Mesh sub{std::move(name), mesh.shape, mesh.axes, {}};
  sub.shape[a] = end - begin;
  for (int64_t flat = 0; flat < mesh.size(); ++flat) {
    const std::vector<int64_t> c = mesh.coords_of(flat);
    if (c[a] >= begin && c[a] < end) sub.devices.push_back(mesh.devices[flat]);
  }
  return sub;
}

Expected<std::vector<Mesh>> MeshesFromYaml(const std::string& text, const std::string& source,
                                           const Topology& topology) {
  return CatchInputErrors<std::vector<Mesh>>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    std::vector<Mesh> meshes;
    if (!doc.is_object() || !doc.contains("meshes")) return meshes;
    const nlohmann::json& list = RequireArray(doc["meshes"], source, "meshes");
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string path = "meshes[" + std::to_string(i) + "]";
      if (list[i].is_object() && !list[i].contains("name")) FailAt(source, path + ".name", "missing required field");
      Mesh m = ReadMeshJson(list[i], source, path, topology, /*devices_optional=*/true);
      for (const Mesh& other : meshes)
        if (other.name == m.name) FailAt(source, path + ".name", "duplicate mesh name '" + m.name + "'");
      meshes.push_back(std::move(m));
    }
    return meshes;
  });
}

Expected<std::vector<Mesh>> ReadTopologyMeshes(const std::string& path, const Topology& topology) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return MeshesFromYaml(*text, path, topology);
}

}  // namespace devplace
