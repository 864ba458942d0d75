// Split candidates of the SOAP action space (env/config.h ActionSpace::kSoap; FlexFlow's Sample, Operator,
// Attribute, Parameter search space restricted to what one action per colocation group can say).
//
// A candidate is a device subset drawn from the machine's structure (all devices, each host, each half of a host,
// each line of a declared mesh along one axis) and the kind of dimension the group's ops are split along (sample,
// attribute, parameter, or the reduction dimension with partial sums, which the simulator prices as a
// reduce-scatter/all-reduce of the partial outputs). The environment's actions are the devices followed by the
// candidates, so a policy chooses "one device" or "this subset, this dimension" per group in one pass.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/mesh.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

// One split action: the ops of a group split evenly over `devices` (part p on devices[p]).
struct SplitCandidate {
  std::vector<DeviceId> devices;  // >= 2 devices, none twice, in the subset's order (MachineSubsets)
  // The kind of dimension each op is split along (CandidateOpConfig). std::nullopt: every op's SplitConfig
  // (its first sample dimension, else any dimension), the environment's single data-parallel action.
  std::optional<DimKind> kind;
  std::string name;  // e.g. "all/sample", "host:h1/parameter", "half:h0:1/reduction", "mesh:m:model:0/sample"
};

// The device subsets of a topology, each with >= 2 devices, in this order and without repeats: all devices; each
// host's devices when there are >= 2 hosts; the first and second half (in id order) of each host with >= 4
// devices; for each mesh and axis of extent >= 2, the lines of devices along that axis (the other coordinates
// fixed). Names: "all", "host:H", "half:H:0|1", "mesh:M:AXIS:i" (i = the line's index in row-major order of
// the other coordinates). The machine's subsets (all, hosts, halves) list their devices in core/device_order.h's
// FastRingOrder, the order Tofu-DP's splits use, so that the rings of a split over them (gradient all-reduce,
// reduce-scatter) run over fast links (a DGX-1's all: 0 1 2 3 7 5 6 4, all NVLink); a mesh line keeps the mesh's
// order. Preconditions: the meshes are valid for the topology (core/mesh.h ValidateMesh).
struct DeviceSubset {
  std::vector<DeviceId> devices;
  std::string name;
};
std::vector<DeviceSubset> MachineSubsets(const Topology& topology, const std::vector<Mesh>& meshes);

// Every subset of MachineSubsets with each of the four dimension kinds (sample, attribute, parameter, reduction),
// subset-major: candidate s * 4 + k is subset s with kind k.
std::vector<SplitCandidate> SoapCandidates(const Topology& topology, const std::vector<Mesh>& meshes);

// The config of `op` under `candidate` (n = its device count): with a kind, the op's first dimension of that kind
// whose extent n divides is split n ways (*native = true); otherwise, and for the kind-less candidate, the op's
// SplitConfig over the subset (*native = false). std::nullopt when neither exists.
std::optional<OpConfig> CandidateOpConfig(const Op& op, const SplitCandidate& candidate, bool* native = nullptr);
// CandidateOpConfig written into *config, reusing the room of its lists: returns false, leaving *config as it was
// (and *native false), where CandidateOpConfig gives std::nullopt.
bool CandidateOpConfigInto(const Op& op, const SplitCandidate& candidate, OpConfig* config, bool* native = nullptr);

}  // namespace devplace
