// Internal to the families: each family draws its structure and hyper-parameters from an Rng and returns a
// generator that builds the forward model at a given scale (cells per stack, unroll length, depth).
#pragma once

#include <cstdint>
#include <functional>

#include "datasets/layers.h"
#include "datasets/rng.h"

namespace devplace {

struct FamilyGenerator {
  std::function<void(LayerBuilder&, int64_t scale)> build;
  int64_t natural_scale = 1;  // the scale drawn from the seed
  int64_t min_scale = 1;      // the smallest scale that makes a valid member
};

FamilyGenerator MakeCifar10Generator(Rng& rng);
FamilyGenerator MakePtbGenerator(Rng& rng);
FamilyGenerator MakeNmtGenerator(Rng& rng);
FamilyGenerator MakeTransformerGenerator(Rng& rng);
FamilyGenerator MakeLstmLmGenerator(Rng& rng);

}  // namespace devplace
