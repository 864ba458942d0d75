// TrainPolicy: the training loop over an experiment's games (PPO), with logging, held-out evaluation and
// exactly resumable checkpoints.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "agents/learned/checkpoint.h"
#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "agents/learned/setup.h"
#include "core/atomic_file.h"

namespace devplace {

namespace fs = std::filesystem;

namespace {

double GeometricMean(const std::vector<double>& values) {
  double log_sum = 0.0;
  int64_t count = 0;
  for (double v : values)
    if (v > 0 && std::isfinite(v)) log_sum += std::log(v), ++count;
  return count == 0 ? 0.0 : std::exp(log_sum / static_cast<double>(count));
}

Expected<std::vector<GameEntry>> MakeEntries(const ExperimentConfig& config, const std::vector<GraphSource>& graphs) {
  std::vector<GameEntry> entries;
  if (graphs.empty()) return entries;
  Expected<std::vector<LabelledGame>> games = MakeExperimentGames(config, graphs);
  if (!games) return games.error();
  for (LabelledGame& g : *games) entries.push_back(MakeGameEntry(std::move(g.game), std::move(g.label)));
  return entries;
}

// Zero-shot T / T_ref on every game (greedy), with a fixed seed so evaluation never perturbs training.
double EvaluateZeroShot(PpoLearner& learner, const std::vector<GameEntry>& entries, uint64_t seed, int64_t* evals) {
  std::vector<double> relative;
  std::mt19937_64 rng(seed);
  for (const GameEntry& e : entries) {
    GameRollout r = learner.Collect(e, 1, /*greedy=*/true, rng);
    relative.push_back(r.episodes[0].penalised_time / e.game->reference_time());
    *evals += r.evaluations;
  }
  return GeometricMean(relative);
}

// Keeps the header and the rows of iterations <= `iteration` (rows a crash wrote after the checkpoint go).
Status TruncateLog(const std::string& path, int64_t iteration) {
  Expected<std::string> text = ReadFile(path);
  std::string kept = TrainLogHeader() + "\n";
  if (text.ok()) {
    std::istringstream in(*text);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      if (std::stoll(line.substr(0, line.find(','))) <= iteration) kept += line + "\n";
    }
  }
  return WriteFileAtomic(path, kept);
}

std::string RngToString(const std::mt19937_64& rng) {
  std::ostringstream out;
  out << rng;
  return out.str();
}

}  // namespace

Expected<TrainSummary> TrainPolicy(const TrainOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  auto say = [&](const std::string& m) {
    if (options.on_message) options.on_message(m);
  };
  const std::string ckpt_dir = (fs::path(options.run_dir) / "ckpt").string();
  const std::string log_path = (fs::path(options.run_dir) / "log.csv").string();

  CheckpointMeta meta;
  if (options.resume) {
    Expected<CheckpointMeta> m = ReadCheckpointMeta(ckpt_dir);
    if (!m) return m.error();
    meta = std::move(m).value();
  } else {
    Expected<std::string> text = ReadFile(options.config_path);
    if (!text) return text.error();
    meta.config_yaml = *text;
    meta.config_source = options.config_path;
    meta.base_dir = fs::path(options.config_path).parent_path().string();
  }
  Expected<ExperimentConfig> parsed = ExperimentConfigFromYaml(meta.config_yaml, meta.config_source, meta.base_dir);
  if (!parsed) return parsed.error();
  const ExperimentConfig& config = *parsed;
  SetPolicyThreads(config.threads);

  say("building " + std::to_string(config.train.size() * config.topologies.size()) + " training and " +
      std::to_string(config.eval.size() * config.topologies.size()) + " held-out games");
  Expected<std::vector<GameEntry>> train = MakeEntries(config, config.train);
  if (!train) return train.error();
  Expected<std::vector<GameEntry>> eval = MakeEntries(config, config.eval);
  if (!eval) return eval.error();

  PolicyNet net(config.policy, config.seed);
  PpoLearner learner(&net, config.ppo, config.ppo.iterations);
  std::mt19937_64 rng(config.seed ^ 0x5851f42d4c957f2dULL);
  std::vector<double> best(train->size(), std::numeric_limits<double>::infinity());
  std::error_code ec;
  fs::create_directories(options.run_dir, ec);
  if (ec) return Error{options.run_dir + ": cannot create directory: " + ec.message()};
  if (options.resume) {
    if (Status s = LoadCheckpointTensors(ckpt_dir, meta, net, &learner.optimizer()); !s) return s.error();
    std::istringstream in(meta.rng_state);
    in >> rng;
    if (in.fail()) return Error{ckpt_dir + "/state.json: rng_state: malformed"};
    if (meta.best_relative_times.size() != best.size())
      return Error{ckpt_dir + "/state.json: best_relative_times: expected " + std::to_string(best.size()) + " entries"};
    for (size_t i = 0; i < best.size(); ++i)
      best[i] = meta.best_relative_times[i] > 0 ? meta.best_relative_times[i] : std::numeric_limits<double>::infinity();
    if (Status s = TruncateLog(log_path, meta.iteration); !s) return s.error();
    say("resuming after iteration " + std::to_string(meta.iteration));
  } else {
    if (Status s = WriteFileAtomic((fs::path(options.run_dir) / "config.yaml").string(), meta.config_yaml); !s)
      return s.error();
    if (Status s = WriteFileAtomic(log_path, TrainLogHeader() + "\n"); !s) return s.error();
  }

  TrainSummary summary;
  summary.checkpoint_dir = ckpt_dir;
  summary.log_path = log_path;
  std::ofstream log(log_path, std::ios::app);
  if (!log) return Error{log_path + ": cannot open for appending"};
  const double previous_wall = meta.wall_seconds;
  int64_t evaluations = meta.evaluations;
  int64_t iteration = meta.iteration;
  const int64_t stop = options.max_iterations > 0 ? std::min<int64_t>(config.ppo.iterations, iteration + options.max_iterations)
                                                  : config.ppo.iterations;
  auto elapsed = [&] {
    return previous_wall + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  while (iteration < stop) {
    TrainIteration row;
    std::vector<GameRollout> rollouts;
    std::vector<double> relative;
    double reward_sum = 0.0;
    for (int32_t k = 0; k < config.ppo.graphs_per_iteration; ++k) {
      const size_t index = rng() % train->size();
      GameRollout r = learner.Collect((*train)[index], config.ppo.samples_per_graph, false, rng);
      evaluations += r.evaluations;
      for (const EpisodeResult& e : r.episodes) {
        const double rel = e.penalised_time / (*train)[index].game->reference_time();
        relative.push_back(rel);
        best[index] = std::min(best[index], rel);
        reward_sum += e.episode_return;
      }
      rollouts.push_back(std::move(r));
    }
    UpdateStats stats = learner.Update(rollouts, iteration, rng);
    ++iteration;
    row.iteration = iteration;
    row.mean_reward = reward_sum / static_cast<double>(relative.size());
    row.mean_relative_time = GeometricMean(relative);
    row.best_relative_time = GeometricMean(best);
    row.entropy = stats.entropy;
    row.policy_loss = stats.policy_loss;
    row.value_loss = stats.value_loss;
    row.clip_fraction = stats.clip_fraction;
    row.approx_kl = stats.approx_kl;
    row.learning_rate = learner.LearningRate(iteration - 1);
    const bool last = iteration == config.ppo.iterations;
    if (!eval->empty() && ((config.eval_every > 0 && iteration % config.eval_every == 0) || last)) {
      row.heldout_relative_time = EvaluateZeroShot(learner, *eval, config.seed + 7, &evaluations);
      summary.heldout_relative_time = row.heldout_relative_time;
    }
    row.evaluations = evaluations;
    row.wall_seconds = elapsed();
    log << TrainLogRow(row) << std::endl;
    if (options.on_iteration) options.on_iteration(row);
    if (iteration % config.checkpoint_every == 0 || iteration == stop) {
      meta.iteration = iteration;
      meta.evaluations = evaluations;
      meta.wall_seconds = row.wall_seconds;
      meta.rng_state = RngToString(rng);
      meta.best_relative_times.clear();
      for (double b : best) meta.best_relative_times.push_back(std::isfinite(b) ? b : 0.0);
      if (Status s = SaveCheckpoint(ckpt_dir, net, &learner.optimizer(), meta); !s) return s.error();
    }
  }
  summary.iterations = iteration;
  summary.evaluations = evaluations;
  return summary;
}

}  // namespace devplace
