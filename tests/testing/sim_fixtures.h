// Helpers for the simulator tests: a fixed-rate cost model double, small machines, and a seeded generator of
// random training graphs and strategies.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/strategy.h"
#include "core/topology.h"
#include "sim/cost_model.h"
#include "sim/simulator.h"

namespace devplace::testing {

// Every part takes flops * seconds_per_flop seconds (a test double: exact, device-independent).
CostModel FixedRateCost(double seconds_per_flop = 1e-9);

// A device with generous defaults.
Device MakeDevice(const std::string& name, int64_t memory_bytes = int64_t{16} << 30);
// A forward op.
Op MakeOp(const std::string& name, double flops, std::vector<int64_t> shape = {1024}, int64_t param_bytes = 0);

// `n` devices, each pair joined directly in both directions (bandwidth B, latency alpha).
Topology FullyConnected(int n, double bandwidth, double latency);
// `n` devices around one switch (every route is two hops, as through NVSwitch or a PCIe switch).
Topology Star(int n, double bandwidth, double latency);
// Two hosts of `per_host` devices each: devices reach their host's switch; the switches are joined.
Topology TwoHosts(int per_host, double bandwidth, double latency);
// `topology` with every link's per-message and per-step costs (seconds) and step bandwidth (bytes/s; 0: none) set.
Topology WithLinkCosts(const Topology& topology, double message_cost, double step_cost, double step_bandwidth = 0);

// Uniform double in [0, 1) from 53 random bits (portable, unlike std::uniform_real_distribution).
double Uniform(std::mt19937_64& rng);
int32_t UniformInt(std::mt19937_64& rng, int32_t n);  // [0, n)

// A layered random forward graph of about `ops` ops whose ops have sample/attribute/parameter/reduction dims,
// turned into a training graph.
Graph RandomTrainingGraph(uint64_t seed, int ops);
// A random config for op `op`: a single device with probability 1 - p_partition, else a random partition.
OpConfig RandomConfig(const Graph& graph, OpId op, int num_devices, double p_partition, std::mt19937_64& rng);
Strategy RandomStrategy(const Graph& graph, int num_devices, double p_partition, std::mt19937_64& rng);

// Expects `a` and `b` equal in every figure a simulation reports (step time, per-device and per-link statistics,
// memory and its overage, OOM and its messages, tasks, bytes moved, cost fallbacks, critical path), under the trace
// `where`. The timelines are not compared.
void ExpectSameResult(const SimResult& a, const SimResult& b, const std::string& where = "");

}  // namespace devplace::testing
