#include "config/validate_suite.h"

#include "core/json_reader.h"
#include "config/reader_util.h"

namespace devplace {

Expected<ValidateSuite> ValidateSuiteFromYaml(const std::string& text, const std::string& source,
                                              const std::string& suite_dir) {
  return CatchInputErrors<ValidateSuite>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    ValidateSuite suite;
    suite.name = root.string("name");
    suite.seed = static_cast<uint64_t>(root.integer_or("seed", 0, 0));
    suite.topology = ResolveConfigPath(root.string("topology"), suite_dir);
    suite.calibrate = root.boolean_or("calibrate", true);
    if (const nlohmann::json* exec = root.optional("exec")) {
      JsonObject e(*exec, source, "exec");
      suite.warmup_steps = static_cast<int32_t>(e.integer_or("warmup_steps", suite.warmup_steps, 0, 1000));
      suite.timed_steps = static_cast<int32_t>(e.integer_or("timed_steps", suite.timed_steps, 1, 1000));
      suite.rounds = static_cast<int32_t>(e.integer_or("rounds", suite.rounds, 1, 100));
      e.finish();
    }
    if (const nlohmann::json* profile = root.optional("profile")) {
      JsonObject p(*profile, source, "profile");
      const std::string mode = p.string_or("mode", "in-graph");
      if (mode != "in-graph" && mode != "isolated") p.fail("mode", "must be in-graph or isolated, not '" + mode + "'");
      suite.profile_isolated = mode == "isolated";
      suite.profile_warmup_runs = static_cast<int32_t>(p.integer_or("warmup_runs", suite.profile_warmup_runs, 0, 1000));
      suite.profile_timed_runs = static_cast<int32_t>(p.integer_or("timed_runs", suite.profile_timed_runs, 1, 1000));
      p.finish();
    }
    ReadSearchBudget(root, &suite.budget_evaluations, &suite.budget_seconds);
    suite.models = ReadGraphList(root, "models", suite_dir, true);
    if (const nlohmann::json* algorithms = root.optional("algorithms")) {
      RequireArray(*algorithms, source, "algorithms");
      if (!algorithms->empty()) suite.algorithms = ReadStringList(root, "algorithms");
    }
    suite.random_placements = static_cast<int32_t>(root.integer_or("random_placements", 0, 0, 10'000));
    if (const nlohmann::json* shardings = root.optional("shardings")) {
      RequireArray(*shardings, source, "shardings");
      for (size_t i = 0; i < shardings->size(); ++i) {
        JsonObject entry((*shardings)[i], source, "shardings[" + std::to_string(i) + "]");
        suite.shardings.push_back({ResolveConfigPath(entry.string("spec"), suite_dir), entry.string_or("mesh", "")});
        entry.finish();
      }
    }
    if (const nlohmann::json* pipelines = root.optional("pipelines")) {
      RequireArray(*pipelines, source, "pipelines");
      for (size_t i = 0; i < pipelines->size(); ++i) {
        JsonObject entry((*pipelines)[i], source, "pipelines[" + std::to_string(i) + "]");
        SuitePipeline p;
        p.stages = static_cast<int32_t>(entry.integer_or("stages", p.stages, 1, 1024));
        p.microbatches = static_cast<int32_t>(entry.integer_or("microbatches", p.microbatches, 1, 1 << 16));
        p.schedule = entry.string_or("schedule", p.schedule);
        if (p.schedule != "gpipe" && p.schedule != "1f1b" && p.schedule != "eager-1f1b")
          entry.fail("schedule", "must be gpipe, 1f1b or eager-1f1b, not '" + p.schedule + "'");
        suite.pipelines.push_back(p);
        entry.finish();
      }
    }
    if (suite.algorithms.empty() && suite.random_placements == 0 && suite.shardings.empty() &&
        suite.pipelines.empty())
      root.fail("algorithms", "give at least one algorithm, random_placements > 0, a sharding or a pipeline");
    if (const nlohmann::json* multi = root.optional("multi_process")) {
      JsonObject m(*multi, source, "multi_process");
      suite.processes = static_cast<int32_t>(m.integer_or("processes", 2, 2, 1024));
      if (const std::string t = m.string_or("topology", ""); !t.empty())
        suite.process_topology = ResolveConfigPath(t, suite_dir);
      m.finish();
    }
    root.finish();
    suite.source = source;
    suite.base_dir = suite_dir;
    return suite;
  });
}

Expected<ValidateSuite> ReadValidateSuite(const std::string& path) {
  return ReadConfigFile<ValidateSuite>(path, ValidateSuiteFromYaml);
}

}  // namespace devplace
