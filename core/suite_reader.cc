#include "core/suite_reader.h"

#include <filesystem>

namespace devplace {

std::string ResolveSuitePath(const std::string& path, const std::string& suite_dir) {
  std::filesystem::path p(path);
  if (p.is_absolute() || std::filesystem::exists(p) || suite_dir.empty()) return path;
  return (std::filesystem::path(suite_dir) / p).string();
}

void ReadSuiteBudget(JsonObject& root, int64_t* evaluations, double* seconds) {
  *evaluations = 0;
  *seconds = 0.0;
  const nlohmann::json* budget = root.optional("budget");
  if (budget == nullptr) return;
  JsonObject b(*budget, root.source(), root.path_of("budget"));
  *evaluations = b.integer_or("evaluations", 0, 0);
  *seconds = b.number_or("seconds", 0.0, 0.0);
  b.finish();
}

std::vector<SuiteModel> ReadSuiteModels(JsonObject& root, const std::string& suite_dir) {
  const nlohmann::json& models = RequireArray(root.required("models"), root.source(), root.path_of("models"));
  if (models.empty()) root.fail("models", "must not be empty");
  std::vector<SuiteModel> out;
  for (size_t i = 0; i < models.size(); ++i) {
    JsonObject m(models[i], root.source(), root.path_of("models") + "[" + std::to_string(i) + "]");
    SuiteModel model;
    model.zoo = m.string_or("zoo", "");
    model.batch = m.integer_or("batch", 0, 0);
    model.family = m.string_or("family", "");
    model.seed = static_cast<uint64_t>(m.integer_or("seed", 0, 0));
    model.target_ops = static_cast<int32_t>(m.integer_or("target_ops", 0, 0, 10'000'000));
    model.file = m.string_or("file", "");
    if (!model.file.empty()) model.file = ResolveSuitePath(model.file, suite_dir);
    if (model.zoo.empty() + model.family.empty() + model.file.empty() != 2)
      m.fail("zoo", "give exactly one of zoo, family or file");
    m.finish();
    out.push_back(std::move(model));
  }
  return out;
}

}  // namespace devplace
