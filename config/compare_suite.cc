#include "config/compare_suite.h"

#include "core/json_reader.h"
#include "config/reader_util.h"

namespace devplace {

Expected<CompareSuite> CompareSuiteFromYaml(const std::string& text, const std::string& source,
                                            const std::string& suite_dir) {
  return CatchInputErrors<CompareSuite>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    CompareSuite suite;
    suite.name = root.string("name");
    suite.seed = static_cast<uint64_t>(root.integer_or("seed", 0, 0));
    suite.baseline = root.string_or("baseline", "expert");
    ReadSearchBudget(root, &suite.budget_evaluations, &suite.budget_seconds);
    suite.models = ReadGraphList(root, "models", suite_dir, true);
    for (std::string& t : suite.topologies = ReadStringList(root, "topologies")) t = ResolveConfigPath(t, suite_dir);
    suite.algorithms = ReadStringList(root, "algorithms");
    root.finish();
    suite.source = source;
    suite.base_dir = suite_dir;
    return suite;
  });
}

Expected<CompareSuite> ReadCompareSuite(const std::string& path) {
  return ReadConfigFile<CompareSuite>(path, CompareSuiteFromYaml);
}

}  // namespace devplace
