#include "core/cut_alignment.h"

#include <array>
#include <cstdint>

#include "core/partition.h"

namespace devplace {

bool AlignedCuts(const Op& producer, const OpConfig& producer_config, const Op& consumer,
                 const OpConfig& consumer_config, bool* even) {
  const std::vector<int32_t>& pd = producer_config.degrees;
  const std::vector<int32_t>& cd = consumer_config.degrees;
  const bool own_forward =
      !consumer.forward_op.empty() && consumer.forward_op == producer.name && consumer.shape == producer.shape;
  const int32_t PartitionDim::*axis_of = own_forward ? &PartitionDim::output_axis : &PartitionDim::input_axis;
  const auto rank = static_cast<int32_t>(producer.shape.size());
  std::array<int64_t, kMaxRank> product;
  product.fill(1);
  for (size_t j = 0, k = 0;; ++j, ++k) {
    while (j < pd.size() && pd[j] == 1) ++j;
    while (k < cd.size() && cd[k] == 1) ++k;
    if (j == pd.size() || k == cd.size()) {
      if (j != pd.size() || k != cd.size()) return false;
      break;
    }
    const int32_t axis = producer.dims[j].output_axis;
    if (axis < 0 || axis >= rank || axis >= kMaxRank || consumer.dims[k].*axis_of != axis || pd[j] != cd[k])
      return false;
    product[axis] *= pd[j];
  }
  if (even != nullptr) {
    *even = true;
    for (int32_t a = 0; a < rank; ++a) *even = *even && producer.shape[a] % product[a] == 0;
  }
  return true;
}

}  // namespace devplace
