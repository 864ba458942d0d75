#include "config/checkpoint_meta.h"

#include "core/json_reader.h"

namespace devplace {

std::string CheckpointMetaToJson(const CheckpointMeta& meta) {
  nlohmann::json j;
  j["iteration"] = meta.iteration;
  j["evaluations"] = meta.evaluations;
  j["wall_seconds"] = meta.wall_seconds;
  j["rng_state"] = meta.rng_state;
  j["config_yaml"] = meta.config_yaml;
  j["config_source"] = meta.config_source;
  j["base_dir"] = meta.base_dir;
  j["model_file"] = meta.model_file;
  j["optimizer_file"] = meta.optimizer_file;
  j["best_relative_times"] = meta.best_relative_times;
  return j.dump(2) + "\n";
}

Expected<CheckpointMeta> CheckpointMetaFromJson(const std::string& text, const std::string& source) {
  return CatchInputErrors<CheckpointMeta>([&]() {
    nlohmann::json doc = ParseJson(text, source);
    JsonObject o(doc, source, "");
    CheckpointMeta m;
    m.iteration = o.integer("iteration", 0);
    m.evaluations = o.integer("evaluations", 0);
    m.wall_seconds = o.number("wall_seconds", 0.0);
    m.rng_state = o.string("rng_state");
    m.config_yaml = o.string("config_yaml");
    m.config_source = o.string_or("config_source", "");
    m.base_dir = o.string_or("base_dir", "");
    m.model_file = o.string("model_file");
    m.optimizer_file = o.string_or("optimizer_file", "");
    const nlohmann::json& best = RequireArray(o.required("best_relative_times"), source, "best_relative_times");
    for (const nlohmann::json& b : best) {
      if (!b.is_number()) o.fail("best_relative_times", "expected numbers");
      m.best_relative_times.push_back(b.get<double>());
    }
    o.finish();
    return m;
  });
}

}  // namespace devplace
