// Order statistics of a list of samples: the nearest-rank quantile and the median.
#pragma once

#include <vector>

namespace devplace {

// The nearest-rank q-quantile of `values` (q in [0, 1]): the smallest value with at least ceil(q x n) of the n
// values at or below it; q = 0 gives the minimum, q = 1 the maximum. 0 for an empty `values`.
double NearestRankQuantile(std::vector<double> values, double q);

// The median of `values`: the middle value, or the mean of the two middle values for an even count; 0 for an
// empty `values`.
double Median(std::vector<double> values);

}  // namespace devplace
