// One tensor per (producer output, destination): which edges of a graph carry the same tensor to the same place,
// so that it moves once (docs/simulator.md, "One transfer per tensor and device"). The one home of the rule: the
// simulators (sim/plain_sim.cc, sim/edge_build.cc) and the multi-process executor (exec/process_transport.cc)
// ask it.
//
// The rule: an edge takes part in sharing when its producer is a forward op (whose out-edges carry its output),
// its consumer is not an update op (an update op reads a weight gradient piece of its own) and it moves bytes.
// Two such edges of one producer that carry the same number of bytes carry the same tensor (the whole output or
// the same slice of it). Among the edges carrying one tensor to one place other than the producer's, the edge with
// the smallest id carries it (its carrier) and the others ride on it.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/graph.h"

namespace devplace {

// Whether edge `e` of `graph` takes part in sharing (see above).
bool SharesTensor(const Graph& graph, int32_t e);

// Whether edges `e` and `f` carry the same tensor: both take part in sharing, leave the same producer and carry
// the same bytes (true for e == f when e takes part).
bool SameTensor(const Graph& graph, int32_t e, int32_t f);

// The carriers of a graph's edges for any placement of its ops on places, assigned per placement in one pass
// over the edges that may share (the classes of edges carrying one tensor, built once per graph).
class TensorCarriers {
 public:
  // `graph` must outlive the object.
  explicit TensorCarriers(const Graph& graph);

  // Assigns the carriers for each op's place (place[op] in [0, num_places), place.size() == num_ops).
  void Assign(std::span<const int32_t> place, int32_t num_places);
  // After Assign: the carrier of edge `e`, where `crosses` says whether its ends are at different places: -1 when
  // it moves nothing across (its ends share a place, or it carries no bytes); e itself when it carries its tensor;
  // else the smallest edge carrying the same tensor to the same place.
  int32_t carrier(int32_t e, bool crosses) const { return crosses ? carrier_[e] : -1; }
  // After Assign: per edge its carrier were it to cross (what carrier(e, true) gives).
  std::span<const int32_t> crossing_carriers() const { return carrier_; }

  // Bytes of the per-graph tables and scratch.
  int64_t memory_bytes() const;

 private:
  // Per class (one producer, the same bytes, at least two edges taking part) its producer and its edges,
  // ascending, with their consumers.
  std::vector<int32_t> class_off_, class_src_, class_edge_, class_dst_;
  // Per edge: its carrier when it crosses (-1 without bytes, itself outside classes; per placement in classes).
  std::vector<int32_t> carrier_;
  std::vector<int32_t> first_;  // per place: the class's carrier there (-1: none yet), reset after each class
};

// The same for one placement (a TensorCarriers built and assigned once): per edge its carrier, as Assign.
std::vector<int32_t> CarrierEdges(const Graph& graph, std::span<const int32_t> place);

}  // namespace devplace
