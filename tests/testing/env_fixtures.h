// Helpers for the environment tests: an exact cost-model double, small machines, small training graphs, and
// the scenarios the conformance suite runs against both MDPs.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/topology.h"
#include "env/game.h"
#include "sim/cost_model.h"

namespace devplace::envtest {

// Every part takes flops / device.peak_flops_f32 seconds (exact and hand-computable).
CostModel PeakRateCost();

// A device with `peak` FLOP/s and `memory_bytes` of memory on host `host`.
Device MakeDevice(const std::string& name, double peak, int64_t memory_bytes, const std::string& host = "h0");
// `n` identical devices (1 GFLOP/s, `memory_bytes` each), each pair joined directly both ways.
Topology Pair(int n, int64_t memory_bytes, double bandwidth = 1e9, double latency = 1e-5);
// Two hosts with two devices each (host 0 fast, host 1 half as fast); devices reach their host's switch, the
// switches are joined by a slower link (multi-hop routes).
Topology TwoHosts(int64_t memory_bytes);

// A forward op with `flops`, output shape `shape` (f32) and `param_bytes`.
Op MakeOp(const std::string& name, double flops, std::vector<int64_t> shape, int64_t param_bytes = 0);
// Training graph of an MLP of `layers` (matmul with parameters, then relu) after an input.
Graph MlpTrainingGraph(int layers);
// Like MlpTrainingGraph, but every matmul can also be split along its parameter (output column) and reduction
// (input column, partial sums) dimensions, and every relu along its attribute (column) dimension.
Graph MatmulTrainingGraph(int layers);
// Training graph of a seeded random layered DAG of about `ops` forward ops.
Graph RandomTrainingGraph(uint64_t seed, int ops);

// prefix followed by the decimal digits of i ("d3"), built without operator+ (GCC 12 warns falsely on
// "literal" + std::to_string(i) under -O2).
std::string Numbered(const std::string& prefix, int64_t i);

// Uniform integer in [0, n) from a 64-bit generator.
int32_t UniformInt(std::mt19937_64& rng, int32_t n);
// A uniformly drawn legal device for the state's current node.
int32_t RandomLegalAction(const PlacementState& state, std::mt19937_64& rng);

// A named (graph, topology, cost) combination.
struct Scenario {
  std::string name;
  std::shared_ptr<const Graph> graph;
  std::shared_ptr<const Topology> topology;
};
// mlp on 2 devices; a random DAG on two hosts; a random DAG on 3 devices with little memory (masks bite,
// some placements run out of memory); the matmul graph on two hosts.
std::vector<Scenario> Scenarios();
// The game of `scenario` under `config`, with PeakRateCost. Fails the calling test on error.
std::shared_ptr<const PlacementGame> MakeGame(const Scenario& scenario, const EnvConfig& config);
// The same for a graph and a machine.
std::shared_ptr<const PlacementGame> MakeGame(std::shared_ptr<const Graph> graph,
                                              std::shared_ptr<const Topology> topology, const EnvConfig& config = {});
// Shared handles, as PlacementGame::Create takes its graph and machine.
std::shared_ptr<const Graph> Share(Graph graph);
std::shared_ptr<const Topology> Share(Topology topology);

}  // namespace devplace::envtest
