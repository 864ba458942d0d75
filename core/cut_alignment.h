// Whether two ops' configs cut a tensor between them the same way (core/partition.h's boxes without computing
// them): the simulator builds such an edge part to part (sim/edge_build.cc), and the SOAP game prices it as free
// (env/game.cc MissingBytes).
#pragma once

#include "core/graph.h"
#include "core/strategy.h"

namespace devplace {

// True when, for every consumer part q, NeededBox(consumer, consumer_config, q, producer) equals
// ComputedBox(producer, producer_config, q % distinct) (distinct: the product of the producer's degrees) and the
// producer's distinct parts compute disjoint boxes with owned = computed (no reduction): the dims each config cuts
// (degree > 1), in dim order, pair up with the same degree and the same axis of the producer's output (the
// consumer's input axis, or its output axis when it reads its own forward op's saved output), so both boxes are cut
// from the same full box the same way with the same digits. Then `*even` (when given) says whether every cut axis
// divides evenly, so that every part's box holds NumElements(producer) / distinct elements. Configs must be valid
// for their ops (sim/ CheckConfig).
bool AlignedCuts(const Op& producer, const OpConfig& producer_config, const Op& consumer,
                 const OpConfig& consumer_config, bool* even = nullptr);

}  // namespace devplace
