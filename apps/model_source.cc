#include "apps/model_source.h"

#include "apps/cli_util.h"
#include "apps/inputs.h"
#include "datasets/families.h"
#include "datasets/zoo.h"

namespace devplace::cli {

Graph LoadSuiteModel(const SuiteModel& model) {
  if (!model.zoo.empty()) return Unwrap(BuildZooModel(model.zoo, model.batch));
  if (!model.family.empty()) {
    FamilyOptions options;
    options.target_ops = model.target_ops;
    return Unwrap(GenerateFamilyMember(model.family, model.seed, options));
  }
  return LoadGraph(model.file);
}

}  // namespace devplace::cli
