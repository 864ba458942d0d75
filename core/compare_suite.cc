#include "core/compare_suite.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/json_reader.h"
#include "core/suite_reader.h"

namespace devplace {

std::string SuiteModel::label() const {
  if (!zoo.empty()) return batch > 0 ? zoo + "-b" + std::to_string(batch) : zoo;
  if (!family.empty())
    return family + "-s" + std::to_string(seed) + (target_ops > 0 ? "-n" + std::to_string(target_ops) : "");
  return std::filesystem::path(file).stem().string();
}

namespace {

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
    ReadSuiteBudget(root, &suite.budget_evaluations, &suite.budget_seconds);
    suite.models = ReadSuiteModels(root, suite_dir);
    for (std::string& t : suite.topologies = StringList(root, "topologies")) t = ResolveSuitePath(t, suite_dir);
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
