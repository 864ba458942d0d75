// TrainPolicy: the training loop over an experiment's games (PPO), with logging, held-out evaluation and
// exactly resumable checkpoints, in one process or as one rank of a data-parallel group (process_group.h).
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <sstream>

#include "agents/learned/checkpoint.h"
#include "agents/learned/demonstration.h"
#include "agents/learned/learner.h"
#include "agents/learned/learning.h"
#include "distributed/process_group.h"
#include "agents/learned/setup.h"
#include "core/atomic_file.h"
#include "core/check.h"

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
  for (LabelledGame& g : *games) {
    entries.push_back(MakeGameEntry(std::move(g.game), std::move(g.label)));
    if (Status s = AddPolicyInputs(config.policy, *entries.back().game, &entries.back().tensors); !s)
      return Error{"policy: " + s.error().message};
  }
  return entries;
}

// Gives every training game the demonstration of its teachers (ExperimentConfig::TrainTeachers: its train entry's
// own, else the ppo: section's; one-shot MDP only). `entries` are MakeEntries's, topology-major: game k plays
// source k % config.train.size().
Status AddDemonstrations(const ExperimentConfig& config, std::vector<GameEntry>* entries,
                         const std::function<void(const std::string&)>& say) {
  std::map<std::string, int32_t> wins;
  std::vector<double> relative;
  int64_t projected = 0;
  for (size_t k = 0; k < entries->size(); ++k) {
    GameEntry& e = (*entries)[k];
    const size_t source = k % config.train.size();
    const Teachers teachers = config.TrainTeachers(source);
    if (teachers.algorithms.empty()) continue;  // (the reader allows teachers in the one-shot MDP only)
    Expected<Demonstration> d = MakeDemonstration(*e.game, teachers.algorithms, config.seed);
    if (!d) return Error{e.label + ": " + d.error().message};
    if (teachers.refine_groups > 0) {
      Expected<int64_t> refined = RefineDemonstration(*e.game, teachers.refine_groups, 2, &*d);
      if (!refined) return Error{e.label + ": " + refined.error().message};
    }
    e.demonstration = std::move(d->device_per_group);
    e.demonstration_coef = teachers.coef;
    ++wins[d->algorithm];
    projected += d->projected_groups;
    relative.push_back(d->penalised_time / e.game->reference_time());
  }
  if (relative.empty()) return {};
  std::string message = "demonstrations on " + std::to_string(relative.size()) + " of " +
                        std::to_string(entries->size()) + " games (";
  for (const auto& [name, count] : wins) message += name + " best on " + std::to_string(count) + ", ";
  char mean[64];
  std::snprintf(mean, sizeof(mean), "geometric mean %.3f of the best single device)", GeometricMean(relative));
  say(message + mean +
      (projected > 0 ? "; " + std::to_string(projected) + " split groups projected onto the SOAP candidates" : ""));
  return {};
}

// The items of a list of `count` dealt round-robin over the group that this process handles, in order (all of
// them alone).
std::vector<size_t> MyItems(size_t count, const ProcessGroup* group) {
  std::vector<size_t> mine;
  for (size_t i = 0; i < count; ++i)
    if (group == nullptr || static_cast<int32_t>(i % static_cast<size_t>(group->size())) == group->rank())
      mine.push_back(i);
  return mine;
}

// Sums `values` element-wise over the group, in place (nothing to do in one process). Lists where each rank
// fills only its own items and leaves zeros elsewhere come back as exact copies of every rank's items.
Status SumOverRanks(ProcessGroup* group, std::vector<double>* values, const std::string& what) {
  if (group == nullptr || values->empty()) return Status::Ok();
  torch::Tensor t = torch::from_blob(values->data(), {static_cast<int64_t>(values->size())}, torch::kFloat64);
  return group->AllReduceSum(t, what);
}

// Zero-shot T / T_ref on every game (greedy), each game with its own fixed seed so evaluation never perturbs
// training and the games can be dealt over the ranks.
Expected<double> EvaluateZeroShot(PpoLearner& learner, const std::vector<GameEntry>& entries, uint64_t seed,
                                  ProcessGroup* group, int64_t* evals) {
  const size_t n = entries.size();
  std::vector<double> results(2 * n, 0.0);  // T / T_ref per game, then evaluations per game
  const std::vector<size_t> mine = MyItems(n, group);
  RunParallel(mine.size(), learner.threads(), [&](size_t i) {
    const size_t j = mine[i];
    std::mt19937_64 rng(seed + 0x9e3779b97f4a7c15ULL * (j + 1));
    GameRollout r = learner.Collect(entries[j], 1, /*greedy=*/true, rng);
    results[j] = r.episodes[0].penalised_time / entries[j].game->reference_time();
    results[n + j] = static_cast<double>(r.evaluations);
  });
  if (Status s = SumOverRanks(group, &results, "held-out evaluation all-reduce"); !s) return s.error();
  for (size_t j = 0; j < n; ++j) *evals += static_cast<int64_t>(results[n + j]);
  results.resize(n);
  return GeometricMean(results);
}

// Where a run starts: the experiment (fresh) or the checkpoint (resume), read by rank 0.
struct Start {
  CheckpointMeta meta;
  CheckpointBlobs blobs;  // resume only
};

Expected<Start> ReadStart(const TrainOptions& options, const std::string& ckpt_dir) {
  Start start;
  if (options.resume) {
    Expected<CheckpointMeta> m = ReadCheckpointMeta(ckpt_dir);
    if (!m) return m.error();
    start.meta = std::move(m).value();
    Expected<CheckpointBlobs> blobs = ReadCheckpointBlobs(ckpt_dir, start.meta);
    if (!blobs) return blobs.error();
    start.blobs = std::move(blobs).value();
  } else {
    Expected<std::string> text = ReadFile(options.config_path);
    if (!text) return text.error();
    start.meta.config_yaml = *text;
    start.meta.config_source = options.config_path;
    start.meta.base_dir = fs::path(options.config_path).parent_path().string();
  }
  return start;
}

// Rank 0's start (or its error) on every rank, so that only rank 0 needs the run directory.
Expected<Start> ShareStart(ProcessGroup& group, Expected<Start> mine, bool resume) {
  const bool root = group.rank() == 0;
  const std::string head = !root ? "" : mine.ok() ? "M" + CheckpointMetaToJson(mine->meta) : "E" + mine.error().message;
  Expected<std::string> got = group.BroadcastBytes(head, 0, "start-up broadcast");
  if (!got) return got.error();
  const std::string who = "rank " + std::to_string(group.rank()) + " of " + std::to_string(group.size());
  if (got->empty() || (*got)[0] != 'M') return root ? mine.error() : Error{who + ": rank 0 could not start: " + got->substr(1)};
  Start start;
  if (root) {
    start = std::move(mine).value();
  } else {
    Expected<CheckpointMeta> meta = CheckpointMetaFromJson(got->substr(1), "rank 0's start-up state");
    if (!meta) return meta.error();
    start.meta = std::move(meta).value();
  }
  if (resume) {
    Expected<std::string> model = group.BroadcastBytes(start.blobs.model, 0, "checkpoint broadcast");
    if (!model) return model.error();
    Expected<std::string> optimizer = group.BroadcastBytes(start.blobs.optimizer, 0, "checkpoint broadcast");
    if (!optimizer) return optimizer.error();
    start.blobs = {std::move(model).value(), std::move(optimizer).value()};
  }
  return start;
}

// A fresh run's parameters from ppo.init_policy: rank 0 reads the snapshot and sends it to the other ranks (or its
// error, so that every rank stops with it); each rank copies it into `net`. Errors start "<config>: ppo.init_policy".
Status WarmStart(const ExperimentConfig& config, const std::string& config_source, ProcessGroup* group,
                 PolicyNet* net, const std::function<void(const std::string&)>& say) {
  const std::string& dir = config.ppo.init_policy;
  const std::string where = config_source + ": ppo.init_policy";
  const bool root = group == nullptr || group->rank() == 0;
  Expected<PolicySnapshot> snapshot = root ? ReadPolicySnapshot(dir) : Expected<PolicySnapshot>(PolicySnapshot{});
  if (root && !snapshot) snapshot = Error{where + ": " + snapshot.error().message};
  if (group != nullptr) {
    const std::string head = !root ? "" : snapshot.ok() ? "M" + CheckpointMetaToJson(snapshot->meta)
                                                        : "E" + snapshot.error().message;
    Expected<std::string> got = group->BroadcastBytes(head, 0, "init_policy broadcast");
    if (!got) return got.error();
    if (got->empty() || (*got)[0] != 'M') return root ? snapshot.error() : Error{got->substr(1)};
    Expected<std::string> model = group->BroadcastBytes(root ? snapshot->model : "", 0, "init_policy broadcast");
    if (!model) return model.error();
    if (!root) {
      Expected<CheckpointMeta> meta = CheckpointMetaFromJson(got->substr(1), "rank 0's init_policy state");
      if (!meta) return meta.error();
      snapshot = PolicySnapshot{std::move(meta).value(), std::move(model).value()};
    }
  }
  if (!snapshot) return snapshot.error();
  if (Status s = InitFromSnapshot(*snapshot, dir, *net, where); !s) return s;
  say("parameters initialised from " + dir + " (iteration " + std::to_string(snapshot->meta.iteration) + ", " +
      snapshot->meta.model_file + " sha256 " + snapshot->meta.model_sha256 + ")");
  return Status::Ok();
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

// Loads a resumed run's policy, optimizer, RNG and best-so-far table from its checkpoint.
Status RestoreRun(const Start& start, const std::string& ckpt_dir, PolicyNet* net, PpoLearner* learner,
                  std::mt19937_64* rng, std::vector<double>* best) {
  const CheckpointMeta& meta = start.meta;
  if (Status s = LoadCheckpointBlobs(start.blobs, ckpt_dir, *net, &learner->optimizer()); !s) return s;
  std::istringstream in(meta.rng_state);
  in >> *rng;
  if (in.fail()) return Error{ckpt_dir + "/state.json: rng_state: malformed"};
  if (meta.best_relative_times.size() != best->size())
    return Error{ckpt_dir + "/state.json: best_relative_times: expected " + std::to_string(best->size()) + " entries"};
  for (size_t i = 0; i < best->size(); ++i)
    (*best)[i] = meta.best_relative_times[i] > 0 ? meta.best_relative_times[i] : std::numeric_limits<double>::infinity();
  return Status::Ok();
}

// One iteration's rollouts and what the log reports of them.
struct IterationRollouts {
  std::vector<GameRollout> rollouts;  // per sampled game (this rank's games filled; the others' are shared later)
  std::vector<size_t> index;          // the training game of each sampled game
  std::vector<double> relative;       // per game and episode: penalised T / T_ref (summed over ranks)
  double reward_sum = 0.0;            // of every episode's return
  int64_t evaluations = 0;            // simulations the episodes ran
};

// Draws the iteration's games and episode seeds from `rng` (the same on every rank; rank r plays games r, r + W,
// ...: the union of the ranks' rollouts is what one process collects), plays this process's games on
// `rollout_threads` threads (each game's episodes draw from the game's own seed and fill only its entries, so
// neither depends on the thread that plays it), sums the outcomes over the ranks and updates `best`.
Expected<IterationRollouts> CollectIteration(const ExperimentConfig& config, const std::vector<GameEntry>& train,
                                             PpoLearner& learner, ProcessGroup* group, std::mt19937_64& rng,
                                             std::vector<double>* best) {
  const size_t games = static_cast<size_t>(config.ppo.graphs_per_iteration);
  const size_t samples = static_cast<size_t>(config.ppo.samples_per_graph);
  IterationRollouts out;
  out.index.resize(games);
  std::vector<uint64_t> seeds(games);
  for (size_t k = 0; k < games; ++k) {
    out.index[k] = rng() % train.size();
    seeds[k] = rng();
  }
  out.rollouts.resize(games);
  // Per game and episode T / T_ref, then per game and episode the return, then per game the evaluations.
  const size_t episodes = games * samples;
  std::vector<double> outcome(2 * episodes + games, 0.0);
  const std::vector<size_t> mine = MyItems(games, group);
  RunParallel(mine.size(), config.rollout_threads, [&](size_t i) {
    const size_t k = mine[i];
    std::mt19937_64 episode_rng(seeds[k]);
    GameRollout& rollout = out.rollouts[k];
    rollout = learner.Collect(train[out.index[k]], static_cast<int32_t>(samples), false, episode_rng);
    DEVPLACE_CHECK(rollout.episodes.size() == samples, "one result per sampled episode");
    for (size_t e = 0; e < samples; ++e) {
      const EpisodeResult& r = rollout.episodes[e];
      outcome[k * samples + e] = r.penalised_time / train[out.index[k]].game->reference_time();
      outcome[episodes + k * samples + e] = r.episode_return;
    }
    outcome[2 * episodes + k] = static_cast<double>(rollout.evaluations);
  });
  if (Status s = SumOverRanks(group, &outcome, "rollout summary all-reduce"); !s) return s.error();
  out.relative.assign(outcome.begin(), outcome.begin() + static_cast<std::ptrdiff_t>(episodes));
  for (size_t k = 0; k < games; ++k) {
    out.evaluations += static_cast<int64_t>(outcome[2 * episodes + k]);
    for (size_t e = 0; e < samples; ++e) {
      (*best)[out.index[k]] = std::min((*best)[out.index[k]], out.relative[k * samples + e]);
      out.reward_sum += outcome[episodes + k * samples + e];
    }
  }
  return out;
}

// Writes the checkpoint of `meta` (iteration, evaluations and wall time already set) with the RNG and best-so-far
// table; a failure says where training stopped and how to continue.
Status SaveRunCheckpoint(const std::string& ckpt_dir, PolicyNet& net, PpoLearner& learner,
                         const std::mt19937_64& rng, const std::vector<double>& best, CheckpointMeta* meta) {
  meta->rng_state = RngToString(rng);
  meta->best_relative_times.clear();
  for (double b : best) meta->best_relative_times.push_back(std::isfinite(b) ? b : 0.0);
  if (Status s = SaveCheckpoint(ckpt_dir, net, &learner.optimizer(), *meta); !s)
    return Error{s.error().message + " (stopped after iteration " + std::to_string(meta->iteration) +
                 "; --resume continues from the last checkpoint written)"};
  return Status::Ok();
}

}  // namespace

Expected<TrainSummary> TrainPolicy(const TrainOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  std::unique_ptr<ProcessGroup> group;
  if (options.distributed && options.distributed->world_size > 1) {
    Expected<std::unique_ptr<ProcessGroup>> connected = ProcessGroup::Connect(*options.distributed);
    if (!connected) return connected.error();
    group = std::move(connected).value();
  }
  const bool writer = group == nullptr || group->rank() == 0;  // rank 0 alone writes the run directory
  auto say = [&](const std::string& m) {
    if (writer && options.on_message) options.on_message(m);
  };
  const std::string ckpt_dir = (fs::path(options.run_dir) / "ckpt").string();
  const std::string log_path = (fs::path(options.run_dir) / "log.csv").string();

  Expected<Start> start = writer ? ReadStart(options, ckpt_dir) : Expected<Start>(Start{});
  if (group) start = ShareStart(*group, std::move(start), options.resume);
  if (!start) return start.error();
  CheckpointMeta& meta = start->meta;
  Expected<ExperimentConfig> parsed = ExperimentConfigFromYaml(meta.config_yaml, meta.config_source, meta.base_dir);
  if (!parsed) return parsed.error();
  const ExperimentConfig& config = *parsed;
  // Ranks share the machine's cores: one policy thread each.
  SetPolicyThreads(group ? 1 : config.threads);
  if (group) {
    say("training as a group of " + std::to_string(group->size()) + " ranks (one policy thread each)");
    if (group->size() > config.ppo.graphs_per_iteration)
      say("warning: " + std::to_string(group->size() - config.ppo.graphs_per_iteration) +
          " ranks have no game to play (ppo.graphs_per_iteration is " +
          std::to_string(config.ppo.graphs_per_iteration) + ")");
  }

  // The policy first (its initialisation draws from its own RNG), so that a warm start that cannot load stops the
  // run before the games and demonstrations are built.
  PolicyNet net(config.policy, config.seed);
  if (!options.resume && !config.ppo.init_policy.empty())
    if (Status s = WarmStart(config, meta.config_source, group.get(), &net, say); !s) return s.error();
  say("building " + std::to_string(config.train.size() * config.topologies.size()) + " training and " +
      std::to_string(config.eval.size() * config.topologies.size()) + " held-out games");
  Expected<std::vector<GameEntry>> train = MakeEntries(config, config.train);
  if (!train) return train.error();
  if (Status s = AddDemonstrations(config, &*train, say); !s) return s.error();
  Expected<std::vector<GameEntry>> eval = MakeEntries(config, config.eval);
  if (!eval) return eval.error();

  PpoLearner learner(&net, config.ppo, config.ppo.iterations, config.rollout_threads);
  std::mt19937_64 rng(config.seed ^ 0x5851f42d4c957f2dULL);
  std::vector<double> best(train->size(), std::numeric_limits<double>::infinity());
  if (writer) {
    std::error_code ec;
    fs::create_directories(options.run_dir, ec);
    if (ec) return Error{options.run_dir + ": cannot create directory: " + ec.message()};
  }
  if (options.resume) {
    if (Status s = RestoreRun(*start, ckpt_dir, &net, &learner, &rng, &best); !s) return s.error();
    if (writer)
      if (Status s = TruncateLog(log_path, meta.iteration); !s) return s.error();
    say("resuming after iteration " + std::to_string(meta.iteration));
  } else if (writer) {
    if (Status s = WriteFileAtomic((fs::path(options.run_dir) / "config.yaml").string(), meta.config_yaml); !s)
      return s.error();
    if (Status s = WriteFileAtomic(log_path, TrainLogHeader() + "\n"); !s) return s.error();
  }

  TrainSummary summary;
  summary.checkpoint_dir = ckpt_dir;
  summary.log_path = log_path;
  summary.rank = group ? group->rank() : 0;
  summary.world_size = group ? group->size() : 1;
  std::ofstream log;
  if (writer) {
    log.open(log_path, std::ios::app);
    if (!log) return Error{log_path + ": cannot open for appending"};
  }
  const double previous_wall = meta.wall_seconds;
  int64_t evaluations = meta.evaluations;
  int64_t iteration = meta.iteration;
  const int64_t stop = options.max_iterations > 0 ? std::min<int64_t>(config.ppo.iterations, iteration + options.max_iterations)
                                                  : config.ppo.iterations;
  auto elapsed = [&] {
    return previous_wall + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  const size_t games = static_cast<size_t>(config.ppo.graphs_per_iteration);
  while (iteration < stop) {
    const auto iteration_started = std::chrono::steady_clock::now();
    TrainIteration row;
    Expected<IterationRollouts> collected = CollectIteration(config, *train, learner, group.get(), rng, &best);
    if (!collected) return collected.error();
    std::vector<GameRollout>& rollouts = collected->rollouts;
    const std::vector<size_t>& index = collected->index;
    const std::vector<double>& relative = collected->relative;
    evaluations += collected->evaluations;
    row.rollout_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - iteration_started).count();
    row.rollout_placements = static_cast<int64_t>(relative.size());
    if (group) {  // every rank learns from every rollout, so each minibatch's work splits over the ranks
      std::vector<const GameEntry*> entries;
      for (size_t k = 0; k < games; ++k) entries.push_back(&(*train)[index[k]]);
      if (Status s = ShareRollouts(&rollouts, entries, *group); !s) return s.error();
    }
    Expected<UpdateStats> stats = group ? learner.UpdateInGroup(rollouts, iteration, rng, *group)
                                        : Expected<UpdateStats>(learner.Update(rollouts, iteration, rng));
    if (!stats) return stats.error();
    ++iteration;
    row.iteration = iteration;
    row.mean_reward = collected->reward_sum / static_cast<double>(relative.size());
    row.mean_relative_time = GeometricMean(relative);
    row.best_relative_time = GeometricMean(best);
    row.entropy = stats->entropy;
    row.policy_loss = stats->policy_loss;
    row.value_loss = stats->value_loss;
    row.clip_fraction = stats->clip_fraction;
    row.approx_kl = stats->approx_kl;
    row.learning_rate = learner.LearningRate(iteration - 1);
    const bool last = iteration == config.ppo.iterations;
    if (!eval->empty() && ((config.eval_every > 0 && iteration % config.eval_every == 0) || last)) {
      Expected<double> heldout = EvaluateZeroShot(learner, *eval, config.seed + 7, group.get(), &evaluations);
      if (!heldout) return heldout.error();
      row.heldout_relative_time = *heldout;
      summary.heldout_relative_time = row.heldout_relative_time;
    }
    row.evaluations = evaluations;
    row.wall_seconds = elapsed();
    if (!writer) continue;
    log << TrainLogRow(row) << std::endl;
    if (!log) return Error{log_path + ": cannot write: " + std::strerror(errno)};
    if (options.on_iteration) options.on_iteration(row);
    if (iteration % config.checkpoint_every == 0 || iteration == stop) {
      meta.iteration = iteration;
      meta.evaluations = evaluations;
      meta.wall_seconds = row.wall_seconds;
      if (Status s = SaveRunCheckpoint(ckpt_dir, net, learner, rng, best, &meta); !s) return s.error();
    }
  }
  if (group) {
    // No rank reports success before rank 0 has written the last checkpoint.
    std::vector<double> done = {1.0};
    if (Status s = SumOverRanks(group.get(), &done, "end-of-run barrier"); !s) return s.error();
  }
  summary.iterations = iteration;
  summary.evaluations = evaluations;
  return summary;
}

}  // namespace devplace
