#include "sim/parts_query_chooser.h"

#include <algorithm>
#include <bit>

namespace devplace::sim {

int PartsQueryChooser::Class(int32_t span) {
  return std::bit_width(static_cast<uint32_t>(std::max(span, 0)));
}

bool PartsQueryChooser::ByParts(int32_t span) {
  SpanClass& c = classes_[Class(span)];
  if (c.whole.queries < kFirstTries || c.parts.queries < kFirstTries) return c.parts.queries <= c.whole.queries;
  const bool parts_cheaper = c.parts.mean < c.whole.mean;
  // The dearer way's turn comes less often the dearer it has been: (ratio - 1) / (kTryOtherEvery x ratio^2) of
  // the cheaper way's cost extra per query, at most 1/64 (at a ratio of 2).
  const double ratio = std::max(1.0, parts_cheaper ? c.whole.mean / std::max(c.parts.mean, 1e-12)
                                                   : c.parts.mean / std::max(c.whole.mean, 1e-12));
  if (++c.since_other >= kTryOtherEvery * ratio * ratio) {
    c.since_other = 0;
    return !parts_cheaper;
  }
  return parts_cheaper;
}

void PartsQueryChooser::Record(int32_t span, bool by_parts, double seconds) {
  SpanClass& c = classes_[Class(span)];
  Way& way = by_parts ? c.parts : c.whole;
  if (way.queries >= kFirstTries) seconds = std::min(seconds, kOutlierRatio * way.mean);
  way.queries = std::min(way.queries + 1, kMeanOver);
  way.mean += (seconds - way.mean) / way.queries;
}

}  // namespace devplace::sim
