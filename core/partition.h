// Partition geometry of an op under a config (core/strategy.h): which region of its output each part computes and
// owns, which region of an input each part needs, and how parts group into copies, reduction rings and weight shards
// and replicas. Regions are boxes over tensor shapes. The simulator prices these regions (sim/, docs/simulator.md)
// and the executor runs them (exec/, docs/executor.md), so both share this one definition.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/strategy.h"
#include "core/topology.h"

namespace devplace {

inline constexpr int kMaxRank = 12;

// A half-open box [lo, hi) over a tensor of rank `rank` (rank 0: a scalar, volume 1).
struct Box {
  int32_t rank = 0;
  std::array<int64_t, kMaxRank> lo{};
  std::array<int64_t, kMaxRank> hi{};
};

// The whole tensor of shape `shape`.
Box FullBox(const std::vector<int64_t>& shape);
// Number of elements in a box (0 for an empty box).
int64_t Volume(const Box& box);
// Volume of the intersection of two boxes of equal rank.
int64_t OverlapVolume(const Box& a, const Box& b);
// The intersection of `a` with `b` (of a's rank); along an axis where they do not meet it is empty (hi == lo), so
// its Volume is 0.
Box Intersection(const Box& a, const Box& b);
// Whether two boxes have the same rank and bounds.
bool SameBox(const Box& a, const Box& b);

// How an op's parts are laid out under a config.
struct PartLayout {
  int32_t parts = 1;      // tasks: distinct parts x copies (config.num_parts())
  int32_t distinct = 1;   // product of the degrees: parts computing different regions
  int32_t copies = 1;     // parts / distinct: redundant copies of every distinct part (OpConfig)
  int32_t reduction = 1;  // product of reduction-dim degrees: parts in one reduction ring
  int32_t shards = 1;     // product of parameter- and reduction-dim degrees: distinct weight shards
  int32_t replicas = 1;   // product of sample- and attribute-dim degrees: replicas of each weight shard in one copy
};
PartLayout Layout(const Op& op, const OpConfig& config);

// Copy index of `part` (0 .. copies-1); parts p and p + distinct compute the same region.
int32_t CopyIndex(const OpConfig& config, int32_t part);

// Index of `part` within its reduction ring (0 .. reduction-1) and the ring's id (parts of one copy with equal
// non-reduction indices share a ring; ids are 0 .. parts/reduction-1).
int32_t ReductionIndex(const Op& op, const OpConfig& config, int32_t part);
int32_t ReductionRing(const Op& op, const OpConfig& config, int32_t part);
// Weight shard of `part` (0 .. shards-1) and its replica index (0 .. replicas-1).
int32_t ShardIndex(const Op& op, const OpConfig& config, int32_t part);
int32_t ReplicaIndex(const Op& op, const OpConfig& config, int32_t part);

// True when every part of `op` (in `graph`) under `config` computes a box of the same extents and needs boxes of
// the same extents of each input: along every axis of the output and of each input, the product of the degrees
// that slice it divides its extent. Then a part's volumes (and what a cost model derives from them) are part 0's.
bool PartsAlike(const Graph& graph, OpId op, const OpConfig& config);

// Region of the output that `part` computes (a partial sum of it when the op has reduction parts).
Box ComputedBox(const Op& op, const OpConfig& config, int32_t part);
// Region that `part` holds after the reduce-scatter (equal to ComputedBox without reduction parts).
Box OwnedBox(const Op& op, const OpConfig& config, int32_t part);
// Region of `producer`'s output that part `part` of `consumer` needs: the consumer's dims slice the producer's
// axis input_axis; dims without an input axis, or whose axis the producer's shape lacks, need that axis whole.
// A backward op reading its own forward op's output (the saved output, same shape) needs its ComputedBox of it.
Box NeededBox(const Op& consumer, const OpConfig& config, int32_t part, const Op& producer);

// The part holding the copy of distinct part `part` (< layout.distinct) that a reader on `device` reads: the copy on
// `device`, else the one whose route to it has the fewest links (the lowest copy on ties). The simulator and the
// executor read every region this way.
int32_t NearestCopy(const Topology& topology, const OpConfig& config, const PartLayout& layout, int32_t part,
                    DeviceId device);
// The part whose copy of weight shard `shard` an update part on `device` reads the gradient from: the shard's
// replica on `device`, else its lowest replica; -1 when no part holds the shard.
int32_t ShardSource(const Op& op, const OpConfig& config, int32_t shard, DeviceId device);

}  // namespace devplace
