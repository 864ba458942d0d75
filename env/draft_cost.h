// What a group's action costs in resharding against its neighbours' actions, for a policy that decodes twice
// (agents/learned/policy.h TransformerPlacer::Cohere with PolicyConfig::draft_cost): a first pass proposes an action
// per group (the draft), and the second pass sees, per group and action, the transfers that action would need to
// and from the neighbours' draft actions. The estimate is per pair of actions and per byte, so the second pass
// prices any draft with one gather per group edge.
#pragma once

#include <vector>

#include "env/game.h"

namespace devplace {

// Per ordered pair of the game's actions (producer b, consumer a), row-major [A x A] with A = num_actions(): the
// estimated seconds per byte of a tensor whose producer's group takes b and whose consumer's group takes a.
// Each action lays the tensor out over its devices: a device holds it whole; a split slices it evenly over its
// subset (part p on the subset's p-th device) along an axis its kind names: sample and the kind-less data-parallel
// candidate along the sample axis, attribute along the attribute axis, a parameter split's output and a reduction
// split's input along the feature axis; a parameter split needs its input whole on every device, and a reduction
// split's output (after its own reduction) is whole on every device. A consumer device misses the part of its need
// that the producer's copy on that device does not hold (same axis: the overlap of the two slices; different axes:
// the product of their fractions; nothing when the producer has no part there). Each missing fraction moves from
// the producer's fastest device towards it (Topology::transfer_time_estimate of 1 MiB, per byte); the pair's value
// is the larger of the slowest receiver's time and the sum over receivers divided by the producer's device count
// (its devices send at once); 0 where the consumer's devices hold what they need (an action to itself, except a
// parameter split: its output is sliced, its input needed whole).
std::vector<double> ActionReshardSecondsPerByte(const PlacementGame& game);

// Per group edge (PlacementGame::edge_src / edge_dst, same order): the bytes its tensors carry, each producer op's
// output counted once per consumer group (one transfer per tensor and destination; the largest of its edges' bytes
// into that group).
std::vector<double> GroupEdgeBytes(const PlacementGame& game);

}  // namespace devplace
