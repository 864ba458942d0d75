#include "datasets/families.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "core/check.h"
#include "datasets/family_generators.h"

namespace devplace {

namespace {

LayerBuilder BuildAt(const FamilyGenerator& gen, const std::string& name, int64_t scale) {
  LayerBuilder b(name);
  gen.build(b, scale);
  return b;
}

// Picks the scale whose training graph has about `target` ops. Op counts grow (almost exactly) linearly with
// the scale, so two small probes give the slope and one secant step corrects any curvature.
Expected<Graph> BuildScaled(const FamilyGenerator& gen, std::string_view family, const std::string& name,
                            int64_t target) {
  LayerBuilder smallest = BuildAt(gen, name, gen.min_scale);
  const int64_t c0 = smallest.training_op_count();
  if (target <= c0) {
    if (static_cast<double>(target) < 0.8 * static_cast<double>(c0))
      return Error{std::string(family) + ": target_ops " + std::to_string(target) +
                   " is below the smallest member this seed's structure allows (" + std::to_string(c0) +
                   " training ops)"};
    return std::move(smallest).BuildTraining();
  }
  const int64_t c1 = BuildAt(gen, name, gen.min_scale + 1).training_op_count();
  DEVPLACE_CHECK(c1 > c0, "family graphs must grow with their scale");
  double slope = static_cast<double>(c1 - c0);
  int64_t k = gen.min_scale + std::llround(static_cast<double>(target - c0) / slope);
  LayerBuilder b = BuildAt(gen, name, k);
  const int64_t c = b.training_op_count();
  if (std::llabs(c - target) > target / 20 && k > gen.min_scale) {
    slope = static_cast<double>(c - c0) / static_cast<double>(k - gen.min_scale);
    const int64_t k2 = std::max<int64_t>(gen.min_scale, k + std::llround(static_cast<double>(target - c) / slope));
    if (k2 != k) b = BuildAt(gen, name, k2);
  }
  return std::move(b).BuildTraining();
}

}  // namespace

std::vector<std::string> FamilyNames() { return {"cifar10", "ptb", "nmt", "transformer", "lstmlm"}; }

Expected<Graph> GenerateFamilyMember(std::string_view family, uint64_t seed, const FamilyOptions& options) {
  if (options.target_ops < 0)
    return Error{"target_ops must be >= 0 (0: natural size), got " + std::to_string(options.target_ops)};
  Rng rng(seed, family);
  FamilyGenerator gen;
  if (family == "cifar10") {
    gen = MakeCifar10Generator(rng);
  } else if (family == "ptb") {
    gen = MakePtbGenerator(rng);
  } else if (family == "nmt") {
    gen = MakeNmtGenerator(rng);
  } else if (family == "transformer") {
    gen = MakeTransformerGenerator(rng);
  } else if (family == "lstmlm") {
    gen = MakeLstmLmGenerator(rng);
  } else {
    return Error{"unknown graph family '" + std::string(family) + "' (known: cifar10, ptb, nmt, transformer, lstmlm)"};
  }
  std::string name = std::string(family) + "-seed" + std::to_string(seed);
  if (options.target_ops > 0) {
    name += "-ops" + std::to_string(options.target_ops);
    return BuildScaled(gen, family, name, options.target_ops);
  }
  return std::move(BuildAt(gen, name, gen.natural_scale)).BuildTraining();
}

}  // namespace devplace
