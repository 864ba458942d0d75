// Logical device meshes (GSPMD, GShard, Alpa): the devices of a topology arranged as an N-dimensional array with
// named axes, e.g. a 2 x 4 mesh with axes `data` and `model`. Tensors are sharded along mesh axes
// (core/sharding.h); a submesh is a slice of a mesh. Meshes are declared in a topology's YAML file (`meshes:`,
// docs/topology-format.md) or laid out from a shorthand such as "2x4" over the topology's first devices, placed so
// that every axis's collectives run over fast links (core/mesh_layout.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/topology.h"

namespace devplace {

// A mesh: `devices` in row-major order over `shape` (the last axis varies fastest), one name per axis.
struct Mesh {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::string> axes;
  std::vector<DeviceId> devices;

  int32_t rank() const { return static_cast<int32_t>(shape.size()); }
  // Number of devices (the product of the shape, at most INT64_MAX: a larger product saturates; 1 for rank 0).
  int64_t size() const;
  // Index of the axis named `axis`, or -1.
  int32_t find_axis(std::string_view axis) const;
  // The device at mesh coordinates `coords` (one per axis, each within its extent).
  DeviceId device_at(const std::vector<int64_t>& coords) const;
  // The coordinates of position `flat` of `devices` (0 <= flat < size()).
  std::vector<int64_t> coords_of(int64_t flat) const;
  bool operator==(const Mesh&) const = default;
};

// Checks a mesh against `topology`: shape and axes of equal length, every extent >= 1, axis names non-empty and
// unique, the product of the shape equal to the device count, every device in the topology and none twice.
// Errors name the field, e.g. "mesh 'm24': shape [2, 4] has 8 positions but 6 devices are given".
Status ValidateMesh(const Mesh& mesh, const Topology& topology);

// The shape and axis names of `shorthand` ("8", "2x4", "2x2x2"), named `name`, without devices: axis names `axes`
// (empty: "data" for one axis, "data", "model" for two, "a0", "a1", ... otherwise). Errors when the shorthand does
// not parse or the names do not match the rank.
Expected<Mesh> ParseMeshShorthand(std::string_view shorthand, const std::vector<std::string>& axes, std::string name);

// ParseMeshShorthand, and an error naming the shorthand when `topology` has fewer devices than the mesh has
// positions ("mesh '2x8': needs 16 devices but topology 'dgx1-v100' has 8"). The devices are left empty.
Expected<Mesh> ParseMeshShorthandFor(std::string_view shorthand, const std::vector<std::string>& axes,
                                    const Topology& topology, std::string name);

// The mesh of shape `shorthand` (ParseMeshShorthand) over the first devices of `topology` by id, laid out so that
// every axis's collectives run over fast links (DefaultMeshDevices, core/mesh_layout.h; on a DGX-1 "8" is the
// all-NVLink ring 0 1 2 3 7 5 6 4). Errors as ParseMeshShorthand, or when the topology has fewer devices than
// positions.
Expected<Mesh> MeshFromShorthand(std::string_view shorthand, const std::vector<std::string>& axes,
                                 const Topology& topology, std::string name = "mesh");

// The submesh of `mesh` keeping positions [begin, end) of axis `axis` (all of every other axis), named `name`.
// Errors on an unknown axis or an empty or out-of-range slice.
Expected<Mesh> SliceMesh(const Mesh& mesh, std::string_view axis, int64_t begin, int64_t end, std::string name);

// The meshes declared under `meshes:` in a topology YAML file (none when the key is absent), validated against
// `topology` (built from the same text) and for unique names. Errors read "<source>: meshes[i].<field>: <reason>".
Expected<std::vector<Mesh>> MeshesFromYaml(const std::string& text, const std::string& source,
                                           const Topology& topology);
// MeshesFromYaml of the file at `path`.
Expected<std::vector<Mesh>> ReadTopologyMeshes(const std::string& path, const Topology& topology);

// "[2, 4]"-style text of a shape, for messages.
std::string FormatShape(const std::vector<int64_t>& shape);

}  // namespace devplace
