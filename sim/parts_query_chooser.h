// How a DeltaSimulator asks about a change of several parts far apart in the order, chosen from what earlier
// queries cost (internal to sim/; DeltaSimulator::set_parts_queries' kMeasured).
#pragma once

#include <array>
#include <cstdint>

namespace devplace::sim {

// Asked by parts (every part but the earliest made and kept, that one asked about), a query costs about what its
// made parts re-time, plus their undo when the next call does not make the same change; asked whole, it costs
// the sweep from the earliest part to where the order settles after the latest. Which is cheaper depends on the
// graph (by parts on 10k-op graphs, where the earliest part's sweep stops soon after it; whole on 1k-op ones,
// where it runs to the end of the order anyway) and on the span, so it is measured: per span class (the bit width
// of the slots between the earliest and the latest part), each way's mean seconds per query, its follow-up
// included (the undo, or the making of the asked change). The way with the lower mean is taken, and the other
// after kTryOtherEvery x ratio^2 queries of the class (ratio: its mean over the cheaper one's), so that its mean
// follows the search at an extra cost of at most 1/64 of the cheaper way's per query. The answers do not depend
// on the choice, only their cost does; the choice is not deterministic (it reads a clock).
class PartsQueryChooser {
 public:
  // Each way is taken first kFirstTries times in turn; then the dearer one every kTryOtherEvery x ratio^2 queries.
  static constexpr int64_t kTryOtherEvery = 16;
  static constexpr int32_t kFirstTries = 2;
  // A way's mean is a plain mean over its first kMeanOver queries, then an exponential one of that weight; a query
  // dearer than kOutlierRatio times its way's mean counts as that much (a preempted thread, a page fault).
  static constexpr int32_t kMeanOver = 16;
  static constexpr double kOutlierRatio = 4.0;

  // Whether to ask by parts the next query whose earliest and latest parts lie `span` slots apart (> 0); counts
  // the query towards its class's next try of the dearer way.
  bool ByParts(int32_t span);
  // Adds `seconds`, what a query of that span asked by parts (or whole) cost with its follow-up, to the way's mean.
  void Record(int32_t span, bool by_parts, double seconds);

 private:
  struct Way {
    double mean = 0;
    int32_t queries = 0;
  };
  struct SpanClass {
    Way whole, parts;
    int64_t since_other = 0;  // queries since the dearer way was last taken
  };
  static int Class(int32_t span);
  std::array<SpanClass, 33> classes_{};
};

}  // namespace devplace::sim
