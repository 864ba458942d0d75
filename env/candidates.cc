#include "env/candidates.h"

#include <algorithm>
#include <map>

#include "core/device_order.h"

namespace devplace {
namespace {

constexpr DimKind kKinds[] = {DimKind::kSample, DimKind::kAttribute, DimKind::kParameter, DimKind::kReduction};

// Appends `devices` under `name` unless it has fewer than 2 devices or its set is already listed.
void AddSubset(std::vector<DeviceId> devices, std::string name, std::vector<DeviceSubset>* out) {
  if (devices.size() < 2) return;
  std::vector<DeviceId> sorted = devices;
  std::sort(sorted.begin(), sorted.end());
  for (const DeviceSubset& s : *out) {
    std::vector<DeviceId> listed = s.devices;
    std::sort(listed.begin(), listed.end());
    if (listed == sorted) return;
  }
  out->push_back({std::move(devices), std::move(name)});
}

// The lines of `mesh` along axis `a`: for each setting of the other coordinates, the devices as coordinate a runs.
void AddMeshLines(const Mesh& mesh, int32_t a, std::vector<DeviceSubset>* out) {
  std::map<std::vector<int64_t>, std::vector<DeviceId>> lines;  // other coordinates -> devices (row-major order)
  for (int64_t flat = 0; flat < mesh.size(); ++flat) {
    std::vector<int64_t> c = mesh.coords_of(flat);
    c.erase(c.begin() + a);
    lines[c].push_back(mesh.devices[flat]);
  }
  int64_t index = 0;
  for (auto& [key, devices] : lines)
    AddSubset(std::move(devices), "mesh:" + mesh.name + ":" + mesh.axes[a] + ":" + std::to_string(index++), out);
}

}  // namespace

std::vector<DeviceSubset> MachineSubsets(const Topology& topology, const std::vector<Mesh>& meshes) {
  std::vector<DeviceSubset> out;
  std::vector<DeviceId> all;
  std::vector<std::string> host_order;
  std::map<std::string, std::vector<DeviceId>> by_host;
  for (DeviceId d = 0; d < topology.num_devices(); ++d) {
    all.push_back(d);
    const std::string& h = topology.device(d).host;
    if (!by_host.count(h)) host_order.push_back(h);
    by_host[h].push_back(d);
  }
  AddSubset(all, "all", &out);
  if (host_order.size() >= 2)
    for (const std::string& h : host_order) AddSubset(by_host[h], "host:" + h, &out);
  for (const std::string& h : host_order) {
    const std::vector<DeviceId>& devs = by_host[h];
    if (devs.size() < 4) continue;
    const auto mid = devs.begin() + static_cast<std::ptrdiff_t>(devs.size() / 2);
    AddSubset({devs.begin(), mid}, "half:" + h + ":0", &out);
    AddSubset({mid, devs.end()}, "half:" + h + ":1", &out);
  }
  for (DeviceSubset& s : out) s.devices = FastRingOrder(topology, std::move(s.devices));
  for (const Mesh& mesh : meshes)
    for (int32_t a = 0; a < mesh.rank(); ++a)
      if (mesh.shape[a] >= 2) AddMeshLines(mesh, a, &out);
  return out;
}

std::vector<SplitCandidate> SoapCandidates(const Topology& topology, const std::vector<Mesh>& meshes) {
  std::vector<SplitCandidate> out;
  for (const DeviceSubset& s : MachineSubsets(topology, meshes))
    for (DimKind k : kKinds) out.push_back({s.devices, k, s.name + "/" + std::string(ToString(k))});
  return out;
}

std::optional<OpConfig> CandidateOpConfig(const Op& op, const SplitCandidate& candidate, bool* native) {
  OpConfig config;
  if (!CandidateOpConfigInto(op, candidate, &config, native)) return std::nullopt;
  return config;
}

bool CandidateOpConfigInto(const Op& op, const SplitCandidate& candidate, OpConfig* config, bool* native) {
  if (native != nullptr) *native = false;
  const auto n = static_cast<int64_t>(candidate.devices.size());
  if (candidate.kind) {
    for (size_t k = 0; k < op.dims.size(); ++k) {
      if (op.dims[k].kind != *candidate.kind || op.dims[k].size < n || op.dims[k].size % n != 0) continue;
      WriteSplitConfig(candidate.devices, op.dims.size(), k, static_cast<int32_t>(n), config);
      if (native != nullptr) *native = true;
      return true;
    }
  }
  return SplitConfigInto(op, candidate.devices, config);
}

}  // namespace devplace
