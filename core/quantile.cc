#include "core/quantile.h"

#include <algorithm>
#include <cmath>

namespace devplace {

double NearestRankQuantile(std::vector<double> values, double q) {
  if (values.empty()) return 0.0;
  const size_t n = values.size();
  const size_t rank = std::clamp<size_t>(static_cast<size_t>(std::ceil(q * static_cast<double>(n))), 1, n);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank - 1), values.end());
  return values[rank - 1];
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  const size_t m = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(m), values.end());
  if (values.size() % 2) return values[m];
  // The lower middle value is the largest of the elements nth_element left before position m.
  const double lower = *std::max_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(m));
  return 0.5 * (lower + values[m]);
}

}  // namespace devplace
