#include "core/compare_suite.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/json_reader.h"

namespace devplace {

std::string SuiteModel::label() const {
  if (!zoo.empty()) return batch > 0 ? zoo + "-b" + std::to_string(batch) : zoo;
  if (!family.empty())
    return family + "-s" + std::to_string(seed) + (target_ops > 0 ? "-n" + std::to_string(target_ops) : "");
  return std::filesystem::path(file).stem().string();
}

namespace {

// A path as given if it exists relative to the current directory, else relative to the suite's directory.
std::string Resolve(const std::string& path, const std::string& suite_dir) {
  std::filesystem::path p(path);
  if (p.is_absolute() || std::filesystem::exists(p) || suite_dir.empty()) return path;
  return (std::filesystem::path(suite_dir) / p).string();
}

std::vector<std::string> StringList(JsonObject& obj, const std::string& key) {
  const nlohmann::json& list = RequireArray(obj.required(key), obj.source(), obj.path_of(key));
  if (list.empty()) obj.fail(key, "must not be empty");
  std::vector<std::string> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(ReadString(list[i], obj.source(), obj.path_of(key) + "[" + std::to_string(i) + "]"));
  return out;
}

}  // namespace

Expected<CompareSuite> CompareSuiteFromYaml(const std::string& text, const std::string& source,
                                            const std::string& suite_dir) {
  return CatchInputErrors<CompareSuite>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    CompareSuite suite;
    suite.name = root.string("name");
    suite.seed = static_cast<uint64_t>(root.integer_or("seed", 0, 0));
    suite.baseline = root.string_or("baseline", "expert");
    if (const nlohmann::json* budget = root.optional("budget")) {
      JsonObject b(*budget, source, "budget");
      suite.budget_evaluations = b.integer_or("evaluations", 0, 0);
      suite.budget_seconds = b.number_or("seconds", 0.0, 0.0);
      b.finish();
    }
    const nlohmann::json& models = RequireArray(root.required("models"), source, "models");
    if (models.empty()) root.fail("models", "must not be empty");
    for (size_t i = 0; i < models.size(); ++i) {
      JsonObject m(models[i], source, "models[" + std::to_string(i) + "]");
      SuiteModel model;
      model.zoo = m.string_or("zoo", "");
      model.batch = m.integer_or("batch", 0, 0);
      model.family = m.string_or("family", "");
      model.seed = static_cast<uint64_t>(m.integer_or("seed", 0, 0));
      model.target_ops = static_cast<int32_t>(m.integer_or("target_ops", 0, 0, 10'000'000));
      model.file = m.string_or("file", "");
      if (!model.file.empty()) model.file = Resolve(model.file, suite_dir);
      if (model.zoo.empty() + model.family.empty() + model.file.empty() != 2)
        m.fail("zoo", "give exactly one of zoo, family or file");
      m.finish();
      suite.models.push_back(std::move(model));
    }
    for (std::string& t : suite.topologies = StringList(root, "topologies")) t = Resolve(t, suite_dir);
    suite.algorithms = StringList(root, "algorithms");
    root.finish();
    suite.base_dir = suite_dir;
    return suite;
  });
}

Expected<CompareSuite> ReadCompareSuite(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  return CompareSuiteFromYaml(*text, path, std::filesystem::path(path).parent_path().string());
}

}  // namespace devplace
