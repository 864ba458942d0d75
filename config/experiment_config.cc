#include "config/experiment_config.h"

#include "config/reader_util.h"
#include "core/json_reader.h"

namespace devplace {

EnvConfig ExperimentConfig::DefaultExperimentEnv() {
  EnvConfig env;
  env.kind = MdpKind::kOneShot;
  return env;
}

namespace {

int32_t Int(JsonObject& o, const std::string& key, int32_t fallback, int32_t min, int32_t max) {
  return static_cast<int32_t>(o.integer_or(key, fallback, min, max));
}

void ReadSimOptions(const nlohmann::json& value, const std::string& source, SimOptions* sim) {
  JsonObject s(value, source, "env.sim");
  sim->segment_bytes = s.integer_or("segment_bytes", sim->segment_bytes, 1);
  sim->max_segments = Int(s, "max_segments", sim->max_segments, 1, 1 << 20);
  sim->optimizer_state_factor = s.number_or("optimizer_state_factor", sim->optimizer_state_factor, 0.0);
  s.finish();
}

void ReadEnv(const nlohmann::json& value, const std::string& source, EnvConfig* env) {
  JsonObject o(value, source, "env");
  const std::string kind = o.string_or("kind", std::string(ToString(env->kind)));
  if (!ParseMdpKind(kind, &env->kind)) o.fail("kind", "expected one_shot or iterative, not '" + kind + "'");
  const std::string initial = o.string_or("initial_placement", std::string(ToString(env->initial_placement)));
  if (!ParseInitialPlacement(initial, &env->initial_placement))
    o.fail("initial_placement", "expected single, round_robin or random, not '" + initial + "'");
  env->oom_penalty = o.number_or("oom_penalty", env->oom_penalty, 0.0);
  env->memory_aware_mask = o.boolean_or("memory_aware_mask", env->memory_aware_mask);
  env->data_parallel_action = o.boolean_or("data_parallel_action", env->data_parallel_action);
  const std::string space = o.string_or("action_space", std::string(ToString(env->action_space)));
  if (!ParseActionSpace(space, &env->action_space))
    o.fail("action_space", "expected devices or soap, not '" + space + "'");
  if (const nlohmann::json* sim = o.optional("sim")) ReadSimOptions(*sim, source, &env->sim);
  o.finish();
  if (Status s = ValidateEnvConfig(*env); !s) throw InputError(source + ": " + s.error().message);
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
  p->candidate_features = Int(o, "candidate_features", p->candidate_features, kCandidateFeatureDimV1, kCandidateFeatureDim);
  if (p->candidate_features != kCandidateFeatureDimV1 && p->candidate_features != kCandidateFeatureDimV2 &&
      p->candidate_features != kCandidateFeatureDim)
    o.fail("candidate_features", "expected " + std::to_string(kCandidateFeatureDimV1) + ", " +
                                     std::to_string(kCandidateFeatureDimV2) + " or " +
                                     std::to_string(kCandidateFeatureDim));
  p->layer_split = o.boolean_or("layer_split", p->layer_split);
  if (p->layer_split && p->kind != "transformer") o.fail("layer_split", "only the transformer policy has it");
  p->coherence = o.boolean_or("coherence", p->coherence);
  if (p->coherence && p->kind != "transformer") o.fail("coherence", "only the transformer policy has it");
  p->coherence_passes = Int(o, "coherence_passes", p->coherence_passes, 1, 8);
  p->draft_cost = o.boolean_or("draft_cost", p->draft_cost);
  if (p->draft_cost && !p->coherence)
    o.fail("draft_cost", "needs coherence: true (it weighs the first pass's actions)");
  p->expert_hint = o.boolean_or("expert_hint", p->expert_hint);
  if (p->expert_hint && p->kind != "transformer") o.fail("expert_hint", "only the transformer policy has it");
  p->strategy_context = o.boolean_or("strategy_context", p->strategy_context);
  if (p->strategy_context && !p->expert_hint)
    o.fail("strategy_context", "needs expert_hint: true (it simulates the expert's placement)");
  o.finish();
}

void ReadPpo(const nlohmann::json& value, const std::string& source, const std::string& base_dir, PpoConfig* p) {
  JsonObject o(value, source, "ppo");
  p->iterations = Int(o, "iterations", p->iterations, 1, 10'000'000);
  p->graphs_per_iteration = Int(o, "graphs_per_iteration", p->graphs_per_iteration, 1, 100'000);
  p->samples_per_graph = Int(o, "samples_per_graph", p->samples_per_graph, 1, 100'000);
  p->epochs = Int(o, "epochs", p->epochs, 1, 1000);
  p->minibatches = Int(o, "minibatches", p->minibatches, 1, 100'000);
  if (p->minibatches > p->graphs_per_iteration)
    o.fail("minibatches", "must be <= ppo.graphs_per_iteration (" + std::to_string(p->graphs_per_iteration) +
                              "): minibatches split the iteration's graphs");
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
  if (o.has("demonstrations")) p->demonstrations = ReadStringList(o, "demonstrations");
  p->demonstration_coef = o.number_or("demonstration_coef", p->demonstration_coef, 0.0);
  p->demonstration_refine_groups = Int(o, "demonstration_refine_groups", p->demonstration_refine_groups, 0, 100'000);
  if (p->demonstration_refine_groups > 0 && p->demonstrations.empty())
    o.fail("demonstration_refine_groups", "needs ppo.demonstrations (it refines their best placement)");
  p->init_policy = o.string_or("init_policy", "");
  if (o.has("init_policy") && p->init_policy.empty()) o.fail("init_policy", "must not be empty");
  if (!p->init_policy.empty()) p->init_policy = ResolveConfigPath(p->init_policy, base_dir);
  p->temperature = o.number_or("temperature", p->temperature, 0.0);
  if (p->temperature <= 0.0) o.fail("temperature", "must be > 0");
  const std::string baseline = o.string_or("baseline", "value");
  if (baseline == "greedy") p->baseline = PpoConfig::Baseline::kGreedy;
  else if (baseline != "value") o.fail("baseline", "expected value or greedy, not '" + baseline + "'");
  o.finish();
}

// The keys of a train entry that name its own teachers (EntryDemonstrations); all optional.
EntryDemonstrations ReadEntryDemonstrations(JsonObject& e) {
  EntryDemonstrations d;
  if (const nlohmann::json* list = e.optional("demonstrations")) {
    RequireArray(*list, e.source(), e.path_of("demonstrations"));
    d.demonstrations.emplace();
    for (size_t i = 0; i < list->size(); ++i)
      d.demonstrations->push_back(
          ReadString((*list)[i], e.source(), e.path_of("demonstrations") + "[" + std::to_string(i) + "]"));
  }
  if (e.has("demonstration_coef")) d.demonstration_coef = e.number("demonstration_coef", 0.0);
  if (e.has("demonstration_refine_groups"))
    d.demonstration_refine_groups = static_cast<int32_t>(e.integer("demonstration_refine_groups", 0, 100'000));
  return d;
}

bool HasOverrides(const EntryDemonstrations& d) {
  return d.demonstrations || d.demonstration_coef || d.demonstration_refine_groups;
}

}  // namespace

Teachers ExperimentConfig::TrainTeachers(size_t i) const {
  Teachers t{ppo.demonstrations, ppo.demonstration_coef, ppo.demonstration_refine_groups};
  if (i >= train_demonstrations.size()) return t;
  const EntryDemonstrations& d = train_demonstrations[i];
  if (d.demonstrations) t.algorithms = *d.demonstrations;
  if (d.demonstration_coef) t.coef = *d.demonstration_coef;
  if (d.demonstration_refine_groups) t.refine_groups = *d.demonstration_refine_groups;
  return t;
}

Expected<ExperimentConfig> ExperimentConfigFromYaml(const std::string& text, const std::string& source,
                                                    const std::string& base_dir) {
  return CatchInputErrors<ExperimentConfig>([&]() {
    nlohmann::json doc = ParseYamlAsJson(text, source);
    JsonObject root(doc, source, "");
    ExperimentConfig c;
    c.name = root.string("name");
    c.seed = static_cast<uint64_t>(root.integer_or("seed", 0, 0));
    for (std::string& t : c.topologies = ReadStringList(root, "topologies")) t = ResolveConfigPath(t, base_dir);
    std::vector<std::string> taught;  // the path of each train entry with its own teachers, by source index
    c.train = ReadGraphList(root, "train", base_dir, true, [&](JsonObject& e, size_t first, size_t count) {
      EntryDemonstrations d = ReadEntryDemonstrations(e);
      if (!HasOverrides(d)) return;
      c.train_demonstrations.resize(first + count);
      taught.resize(first + count);
      for (size_t i = first; i < first + count; ++i) c.train_demonstrations[i] = d, taught[i] = e.path_of("");
    });
    c.train_demonstrations.resize(c.train.size());
    taught.resize(c.train.size());
    c.eval = ReadGraphList(root, "eval", base_dir, false);
    if (const nlohmann::json* env = root.optional("env")) ReadEnv(*env, source, &c.env);
    if (const nlohmann::json* policy = root.optional("policy")) ReadPolicy(*policy, source, &c.policy);
    c.policy.data_parallel_action = c.env.data_parallel_action;
    c.policy.soap = c.env.action_space == ActionSpace::kSoap;
    c.env.star_reshard = c.policy.soap && c.policy.candidate_features > kCandidateFeatureDimV2;
    if (const nlohmann::json* ppo = root.optional("ppo")) ReadPpo(*ppo, source, base_dir, &c.ppo);
    if (!c.ppo.demonstrations.empty() && c.env.kind != MdpKind::kOneShot)
      FailAt(source, "ppo.demonstrations", "only the one_shot environment replays demonstrations");
    if (c.ppo.baseline == PpoConfig::Baseline::kGreedy && c.env.kind != MdpKind::kOneShot)
      FailAt(source, "ppo.baseline", "greedy needs the one_shot environment (one greedy placement per game)");
    for (size_t i = 0; i < c.train.size(); ++i) {
      if (taught[i].empty()) continue;
      const Teachers t = c.TrainTeachers(i);
      if (t.refine_groups > 0 && t.algorithms.empty())
        FailAt(source, taught[i] + "demonstration_refine_groups",
               "needs demonstrations (here or in ppo:; it refines their best placement)");
      if (!t.algorithms.empty() && c.env.kind != MdpKind::kOneShot)
        FailAt(source, taught[i] + "demonstrations", "only the one_shot environment replays demonstrations");
    }
    if ((c.policy.kind == "transformer") != (c.env.kind == MdpKind::kOneShot))
      root.fail("policy", "policy.kind transformer needs env.kind one_shot, placeto needs iterative");
    if (c.policy.soap && c.policy.kind != "transformer")
      root.fail("policy", "env.action_space soap needs policy.kind transformer (the Placeto policy has no head for "
                          "split candidates)");
    c.eval_every = Int(root, "eval_every", c.eval_every, 0, 1'000'000);
    c.checkpoint_every = Int(root, "checkpoint_every", c.checkpoint_every, 1, 1'000'000);
    c.threads = Int(root, "threads", c.threads, 1, 256);
    c.rollout_threads = Int(root, "rollout_threads", c.rollout_threads, 1, 256);
    root.finish();
    c.base_dir = base_dir;
    return c;
  });
}

Expected<ExperimentConfig> ReadExperimentConfig(const std::string& path) {
  return ReadConfigFile<ExperimentConfig>(path, ExperimentConfigFromYaml);
}

}  // namespace devplace
