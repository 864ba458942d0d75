#include "core/experiment_config.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "core/json_reader.h"

namespace devplace {

std::string GraphSource::label() const {
  if (!zoo.empty()) return batch > 0 ? zoo + "-b" + std::to_string(batch) : zoo;
  if (!family.empty())
    return family + "-s" + std::to_string(seed) + (target_ops > 0 ? "-n" + std::to_string(target_ops) : "");
  return std::filesystem::path(file).stem().string();
}

namespace {

std::string Resolve(const std::string& path, const std::string& base_dir) {
  std::filesystem::path p(path);
  if (p.is_absolute() || std::filesystem::exists(p) || base_dir.empty()) return path;
  return (std::filesystem::path(base_dir) / p).string();
}

// One entry of a graph list; `seeds: {from, count}` or `seeds: [..]` expands to several family members.
void ReadGraphEntry(const nlohmann::json& value, const std::string& source, const std::string& path,
                    const std::string& base_dir, std::vector<GraphSource>* out) {
  JsonObject m(value, source, path);
  GraphSource g;
  g.zoo = m.string_or("zoo", "");
  g.batch = m.integer_or("batch", 0, 0);
  g.family = m.string_or("family", "");
  g.target_ops = static_cast<int32_t>(m.integer_or("target_ops", 0, 0, 10'000'000));
  g.file = m.string_or("file", "");
  if (!g.file.empty()) g.file = Resolve(g.file, base_dir);
  if (g.zoo.empty() + g.family.empty() + g.file.empty() != 2) m.fail("zoo", "give exactly one of zoo, family or file");
  std::vector<uint64_t> seeds;
  const bool has_seed = m.has("seed"), has_seeds = m.has("seeds");
  if (has_seed && has_seeds) m.fail("seeds", "give seed or seeds, not both");
  if (has_seed) seeds.push_back(static_cast<uint64_t>(m.integer("seed", 0)));
  if (has_seeds) {
    const nlohmann::json& s = m.required("seeds");
    if (s.is_array()) {
      for (size_t i = 0; i < s.size(); ++i)
        seeds.push_back(static_cast<uint64_t>(
            ReadInteger(s[i], source, m.path_of("seeds") + "[" + std::to_string(i) + "]", 0)));
    } else {
      JsonObject range(s, source, m.path_of("seeds"));
      const int64_t from = range.integer("from", 0);
      const int64_t count = range.integer("count", 1, 100'000);
      range.finish();
      for (int64_t i = 0; i < count; ++i) seeds.push_back(static_cast<uint64_t>(from + i));
    }
    if (seeds.empty()) m.fail("seeds", "must not be empty");
  }
  if (!seeds.empty() && g.family.empty()) m.fail("seeds", "only family entries take seeds");
  m.finish();
  if (seeds.empty()) seeds.push_back(0);
  for (uint64_t seed : seeds) {
    g.seed = seed;
    out->push_back(g);
  }
}

std::vector<GraphSource> ReadGraphList(JsonObject& root, const std::string& key, const std::string& base_dir,
                                       bool required) {
  std::vector<GraphSource> out;
  const nlohmann::json* list = required ? &root.required(key) : root.optional(key);
  if (list == nullptr) return out;
  RequireArray(*list, root.source(), root.path_of(key));
  for (size_t i = 0; i < list->size(); ++i)
    ReadGraphEntry((*list)[i], root.source(), root.path_of(key) + "[" + std::to_string(i) + "]", base_dir, &out);
  if (required && out.empty()) root.fail(key, "must not be empty");
  return out;
}

int32_t Int(JsonObject& o, const std::string& key, int32_t fallback, int32_t min, int32_t max) {
  return static_cast<int32_t>(o.integer_or(key, fallback, min, max));
}

void ReadEnv(const nlohmann::json& value, const std::string& source, ExperimentEnv* env) {
  JsonObject o(value, source, "env");
  env->kind = o.string_or("kind", env->kind);
  if (env->kind != "one_shot" && env->kind != "iterative") o.fail("kind", "expected one_shot or iterative");
  env->initial_placement = o.string_or("initial_placement", env->initial_placement);
  if (env->initial_placement != "single" && env->initial_placement != "round_robin" &&
      env->initial_placement != "random")
    o.fail("initial_placement", "expected single, round_robin or random");
  env->oom_penalty = o.number_or("oom_penalty", env->oom_penalty, 0.0);
  env->memory_aware_mask = o.boolean_or("memory_aware_mask", env->memory_aware_mask);
  env->data_parallel_action = o.boolean_or("data_parallel_action", env->data_parallel_action);
  if (const nlohmann::json* sim = o.optional("sim")) {
    JsonObject s(*sim, source, "env.sim");
    env->segment_bytes = s.integer_or("segment_bytes", env->segment_bytes, 1);
    env->max_segments = Int(s, "max_segments", env->max_segments, 1, 1 << 20);
    env->optimizer_state_factor = s.number_or("optimizer_state_factor", env->optimizer_state_factor, 0.0);
    s.finish();
  }
  o.finish();
}

void ReadPolicy(const nlohmann::json& value, const std::string& source, PolicyConfig* p) {
  JsonObject o(value, source, "policy");
  p->kind = o.string_or("kind", p->kind);
  if (p->kind != "transformer" && p->kind != "placeto") o.fail("kind", "expected transformer or placeto");
  p->hidden = Int(o, "hidden", p->hidden, 4, 4096);
  p->sage_layers = Int(o, "sage_layers", p->sage_layers, 1, 16);
  p->transformer_layers = Int(o, "transformer_layers", p->transformer_layers, 0, 32);
  p->heads = Int(o, "heads", p->heads, 1, 64);
  if (p->hidden % p->heads != 0) o.fail("heads", "must divide policy.hidden");
  p->feedforward = Int(o, "feedforward", p->feedforward, 1, 65536);
  p->segment = Int(o, "segment", p->segment, 1, 65536);
  p->max_devices = Int(o, "max_devices", p->max_devices, 1, 1024);
  o.finish();
}

void ReadPpo(const nlohmann::json& value, const std::string& source, PpoConfig* p) {
  JsonObject o(value, source, "ppo");
  p->iterations = Int(o, "iterations", p->iterations, 0, 10'000'000);
  p->graphs_per_iteration = Int(o, "graphs_per_iteration", p->graphs_per_iteration, 1, 100'000);
  p->samples_per_graph = Int(o, "samples_per_graph", p->samples_per_graph, 1, 100'000);
  p->epochs = Int(o, "epochs", p->epochs, 1, 1000);
  p->minibatches = Int(o, "minibatches", p->minibatches, 1, 100'000);
  p->clip = o.number_or("clip", p->clip, 0.0);
  p->value_coef = o.number_or("value_coef", p->value_coef, 0.0);
  p->entropy_coef = o.number_or("entropy_coef", p->entropy_coef, 0.0);
  p->lr = o.number_or("lr", p->lr, 0.0);
  p->lr_final = o.number_or("lr_final", p->lr, 0.0);
  p->max_grad_norm = o.number_or("max_grad_norm", p->max_grad_norm, 0.0);
  p->gamma = o.number_or("gamma", p->gamma, 0.0);
  if (p->gamma > 1.0) o.fail("gamma", "must be in [0, 1]");
  p->gae_lambda = o.number_or("gae_lambda", p->gae_lambda, 0.0);
  if (p->gae_lambda > 1.0) o.fail("gae_lambda", "must be in [0, 1]");
  if (const nlohmann::json* names = o.optional("demonstrations")) {
    const std::string path = o.path_of("demonstrations");
    RequireArray(*names, source, path);
    for (size_t i = 0; i < names->size(); ++i)
      p->demonstrations.push_back(ReadString((*names)[i], source, path + "[" + std::to_string(i) + "]"));
  }
  p->demonstration_coef = o.number_or("demonstration_coef", p->demonstration_coef, 0.0);
  p->temperature = o.number_or("temperature", p->temperature, 0.0);
  if (p->temperature <= 0.0) o.fail("temperature", "must be > 0");
  o.finish();
}

}  // namespace

Expected<ExperimentConfig> ExperimentConfigFromYaml(const std::string& text, const std::string& source,
                                                    const std::string& base_dir) {
  return CatchInputErrors<ExperimentConfig>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    ExperimentConfig c;
    c.name = root.string("name");
    c.seed = static_cast<uint64_t>(root.integer_or("seed", 0, 0));
    const nlohmann::json& topos = RequireArray(root.required("topologies"), source, "topologies");
    if (topos.empty()) root.fail("topologies", "must not be empty");
    for (size_t i = 0; i < topos.size(); ++i)
      c.topologies.push_back(Resolve(ReadString(topos[i], source, "topologies[" + std::to_string(i) + "]"), base_dir));
    c.train = ReadGraphList(root, "train", base_dir, true);
    c.eval = ReadGraphList(root, "eval", base_dir, false);
    if (const nlohmann::json* env = root.optional("env")) ReadEnv(*env, source, &c.env);
    if (const nlohmann::json* policy = root.optional("policy")) ReadPolicy(*policy, source, &c.policy);
    c.policy.data_parallel_action = c.env.data_parallel_action;
    if (const nlohmann::json* ppo = root.optional("ppo")) ReadPpo(*ppo, source, &c.ppo);
    if ((c.policy.kind == "transformer") != (c.env.kind == "one_shot"))
      root.fail("policy", "policy.kind transformer needs env.kind one_shot, placeto needs iterative");
    c.eval_every = Int(root, "eval_every", c.eval_every, 0, 1'000'000);
    c.checkpoint_every = Int(root, "checkpoint_every", c.checkpoint_every, 1, 1'000'000);
    c.threads = Int(root, "threads", c.threads, 1, 256);
    root.finish();
    c.base_dir = base_dir;
    return c;
  });
}

Expected<ExperimentConfig> ReadExperimentConfig(const std::string& path) {
  Expected<std::string> text = ReadFile(path);
  if (!text.ok()) return text.error();
  std::filesystem::path p(path);
  // Repository-style configs name paths from the repository root: use the current directory when it holds
  // them, else the config's directory (as compare suites do).
  return ExperimentConfigFromYaml(*text, path, p.parent_path().string());
}

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
