// Python bindings of the placement environments (env/, docs/environments.md) in the shape of Gymnasium's API:
// _PlacementEnv (one episode at a time over PlacementGame/PlacementState) and _PlacementVecEnv (N envs, each an
// EnvBatch of one, stepped on C++ threads with the GIL released). devplace/__init__.py adds the space descriptions.
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "env/batch.h"
#include "env/config.h"
#include "env/game.h"
#include "env/state.h"
#include "python/bindings.h"

namespace devplace::python {
namespace {

// The game for (graph, topology) under the given settings; `mdp` is "one-shot"/"one_shot" or "iterative".
std::shared_ptr<const PlacementGame> MakeGame(std::shared_ptr<Graph> graph, std::shared_ptr<Topology> topology,
                                              std::string mdp, const std::string& initial_placement,
                                              double oom_penalty, bool memory_aware_mask, bool data_parallel_action,
                                              std::optional<CostModel> costs) {
  EnvConfig config;
  std::replace(mdp.begin(), mdp.end(), '-', '_');
  if (!ParseMdpKind(mdp, &config.kind))
    throw py::value_error("mdp: expected 'one-shot' or 'iterative', got '" + mdp + "'");
  if (!ParseInitialPlacement(initial_placement, &config.initial_placement))
    throw py::value_error("initial_placement: expected 'single', 'round_robin' or 'random', got '" +
                          initial_placement + "'");
  config.oom_penalty = oom_penalty;
  config.memory_aware_mask = memory_aware_mask;
  config.data_parallel_action = data_parallel_action;
  return Unwrap(PlacementGame::Create(std::move(graph), std::move(topology), costs.value_or(CostModel()), config));
}

// Pointers into the NumPy arrays of one observation (or of a batch of them, at one env's offset).
struct ObsBuffers {
  float* node_features = nullptr;
  int32_t* edge_index = nullptr;
  float* device_features = nullptr;
  int32_t* placement = nullptr;
  int32_t* current_node = nullptr;
  int8_t* action_mask = nullptr;
};

// Sizes of one observation of `game`.
struct ObsShape {
  py::ssize_t nodes, edges, devices, actions;
  explicit ObsShape(const PlacementGame& game)
      : nodes(game.num_groups()), edges(static_cast<py::ssize_t>(game.edge_src().size())),
        devices(game.num_devices()), actions(game.num_actions()) {}
};

// Allocates the arrays of `batch` observations (batch 0: unbatched) and returns (obs dict, action mask).
std::pair<py::dict, py::array_t<int8_t>> AllocateObs(const ObsShape& s, py::ssize_t batch, ObsBuffers* buffers) {
  auto shape = [batch](std::vector<py::ssize_t> dims) {
    if (batch > 0) dims.insert(dims.begin(), batch);
    return dims;
  };
  py::array_t<float> nodes(shape({s.nodes, kNodeFeatureDim}));
  py::array_t<int32_t> edges(shape({2, s.edges}));
  py::array_t<float> devices(shape({s.devices, kDeviceFeatureDim}));
  py::array_t<int32_t> placement(shape({s.nodes}));
  py::array_t<int32_t> current(shape({}));  // unbatched: a 0-d array, which PlacementEnv replaces by an int
  py::array_t<int8_t> mask(shape({s.actions}));
  *buffers = {nodes.mutable_data(), edges.mutable_data(), devices.mutable_data(),
              placement.mutable_data(), current.mutable_data(), mask.mutable_data()};
  py::dict obs;
  obs["node_features"] = nodes;
  obs["edge_index"] = edges;
  obs["device_features"] = devices;
  obs["placement"] = placement;
  obs["current_node"] = current;
  return {obs, mask};
}

// Copies observation `o` into the buffers of env `index` of a batch.
void CopyObs(const Observation& o, const ObsShape& s, py::ssize_t index, const ObsBuffers& b) {
  std::copy(o.node_features.begin(), o.node_features.end(), b.node_features + index * s.nodes * kNodeFeatureDim);
  std::copy(o.edge_src.begin(), o.edge_src.end(), b.edge_index + index * 2 * s.edges);
  std::copy(o.edge_dst.begin(), o.edge_dst.end(), b.edge_index + index * 2 * s.edges + s.edges);
  std::copy(o.device_features.begin(), o.device_features.end(),
            b.device_features + index * s.devices * kDeviceFeatureDim);
  std::copy(o.placement.begin(), o.placement.end(), b.placement + index * s.nodes);
  b.current_node[index] = o.current_node;
  std::copy(o.legal_mask.begin(), o.legal_mask.end(), b.action_mask + index * s.actions);
}

// One environment, one episode at a time (Gymnasium's Env shape). The episode seeds are drawn from a generator
// seeded by the constructor's seed (or reset's), so the same seeds give the same episodes.
class PlacementEnv {
 public:
  PlacementEnv(std::shared_ptr<const PlacementGame> game, uint64_t seed) : game_(std::move(game)), rng_(seed) {}

  py::tuple Reset(std::optional<uint64_t> seed) {
    if (seed) rng_.seed(*seed);
    const uint64_t episode_seed = rng_();
    {
      py::gil_scoped_release release;
      state_.reset();  // first, so that an iterative episode's delta simulator goes back to the game for the next
      state_.emplace(game_->NewInitialState(episode_seed));
    }
    auto [obs, info] = ObsAndInfo();
    return py::make_tuple(obs, info);
  }

  py::tuple Step(int32_t action) {
    if (!state_) throw py::value_error("step() before reset()");
    Status status;
    {
      py::gil_scoped_release release;
      status = state_->ApplyAction(action);
    }
    Check(status);
    auto [obs, info] = ObsAndInfo();
    return py::make_tuple(obs, state_->last_reward(), state_->IsTerminal(), false, info);
  }

  const PlacementGame& game() const { return *game_; }
  Strategy CurrentStrategy() const {
    if (!state_ || !state_->is_complete()) throw py::value_error("the placement is not complete yet");
    return state_->strategy();
  }

 private:
  // The observation of the current state, and the info dict: its action mask and the episode's figures.
  std::pair<py::dict, py::dict> ObsAndInfo() {
    state_->FillObservation(&obs_);
    const ObsShape shape(*game_);
    ObsBuffers buffers;
    auto [obs, mask] = AllocateObs(shape, 0, &buffers);
    CopyObs(obs_, shape, 0, buffers);
    obs["current_node"] = py::int_(obs_.current_node);
    py::dict info;
    info["action_mask"] = mask;
    info["episode_return"] = state_->Return();
    if (state_->is_complete()) {
      info["step_time"] = state_->step_time();
      info["oom"] = state_->oom();
    }
    return {obs, info};
  }

  std::shared_ptr<const PlacementGame> game_;
  std::mt19937_64 rng_;
  std::optional<PlacementState> state_;
  Observation obs_;
};

// N environments of one game. Env i is an EnvBatch of one env with base seed (seed + i), so results do not
// depend on the thread count; finished episodes restart in the same step (Gymnasium's vector autoreset):
// the returned observation is then the next episode's first, and info carries the finished episode's figures.
class PlacementVecEnv {
 public:
  PlacementVecEnv(std::shared_ptr<const PlacementGame> game, int32_t num_envs, uint64_t seed, int32_t num_threads)
      : game_(std::move(game)), num_envs_(num_envs), seed_(seed) {
    if (num_envs < 1) throw py::value_error("num_envs: must be >= 1");
    num_threads_ = num_threads > 0 ? num_threads : HardwareThreads();
  }

  py::tuple Reset(std::optional<uint64_t> seed) {
    if (seed) seed_ = *seed;
    if (envs_.empty() || seed) {
      std::vector<std::optional<EnvBatch>> created(num_envs_);
      std::vector<Status> errors(num_envs_);
      {
        py::gil_scoped_release release;
        ParallelFor(static_cast<size_t>(num_envs_), num_threads_, [&](size_t i) {
          Expected<EnvBatch> batch = EnvBatch::Create({game_}, 1, seed_ + static_cast<uint64_t>(i));
          if (batch.ok()) created[i].emplace(std::move(batch).value()); else errors[i] = batch.error();
        });
      }
      for (const Status& e : errors) Check(e);
      envs_.clear();
      for (auto& b : created) envs_.push_back(std::move(*b));
    } else {
      py::gil_scoped_release release;
      ParallelFor(static_cast<size_t>(num_envs_), num_threads_, [&](size_t i) { envs_[i].Reset(); });
    }
    const ObsShape shape(*game_);
    ObsBuffers buffers;
    auto [obs, mask] = AllocateObs(shape, num_envs_, &buffers);
    for (int32_t i = 0; i < num_envs_; ++i) CopyObs(envs_[i].observation(0), shape, i, buffers);
    py::dict info;
    info["action_mask"] = mask;
    return py::make_tuple(obs, info);
  }

  py::tuple Step(py::array_t<int32_t, py::array::c_style | py::array::forcecast> actions) {
    if (envs_.empty()) throw py::value_error("step() before reset()");
    if (actions.ndim() != 1 || actions.shape(0) != num_envs_)
      throw py::value_error("actions: expected " + std::to_string(num_envs_) + " actions");
    const int32_t* a = actions.data();
    for (int32_t i = 0; i < num_envs_; ++i) {  // checked first, so that a bad action changes nothing
      const PlacementState& s = envs_[i].state(0);
      if (a[i] < 0 || a[i] >= game_->num_actions() || !s.LegalActionsMask()[a[i]])
        throw py::value_error("env " + std::to_string(i) + ": action " + std::to_string(a[i]) +
                              " is not legal for node " + std::to_string(s.current_node()));
    }
    const ObsShape shape(*game_);
    ObsBuffers buffers;
    auto [obs, mask] = AllocateObs(shape, num_envs_, &buffers);
    py::array_t<double> rewards(num_envs_), returns(num_envs_), final_times(num_envs_);
    py::array_t<bool> terminated(num_envs_), truncated(num_envs_);
    double *reward = rewards.mutable_data(), *ret = returns.mutable_data(), *final_time = final_times.mutable_data();
    bool *term = terminated.mutable_data(), *trunc = truncated.mutable_data();
    std::vector<Status> errors(num_envs_);
    {
      py::gil_scoped_release release;
      ParallelFor(static_cast<size_t>(num_envs_), num_threads_, [&](size_t i) {
        BatchStep step;
        errors[i] = envs_[i].Step(std::span<const int32_t>(a + i, 1), &step);
        reward[i] = step.rewards.empty() ? 0.0 : step.rewards[0];
        term[i] = !step.dones.empty() && step.dones[0];
        trunc[i] = false;
        const auto& finished = envs_[i].finished_episodes();
        ret[i] = finished.empty() ? std::nan("") : finished.back().episode_return;
        final_time[i] = finished.empty() ? std::nan("") : finished.back().final_step_time;
        envs_[i].ClearFinishedEpisodes();
        CopyObs(envs_[i].observation(0), shape, i, buffers);
      });
    }
    for (const Status& e : errors) Check(e);
    py::dict info;
    info["action_mask"] = mask;
    info["episode_return"] = returns;
    info["final_step_time"] = final_times;
    return py::make_tuple(obs, rewards, terminated, truncated, info);
  }

  const PlacementGame& game() const { return *game_; }
  int32_t num_envs() const { return num_envs_; }
  int32_t num_threads() const { return num_threads_; }

 private:
  std::shared_ptr<const PlacementGame> game_;
  int32_t num_envs_;
  uint64_t seed_;
  int32_t num_threads_ = 1;
  std::vector<EnvBatch> envs_;
};

// The sizes both env classes expose (for the space descriptions).
template <class Cls>
void DefSizes(Cls& cls) {
  using T = typename Cls::type;
  cls.def_property_readonly("num_nodes", [](const T& e) { return e.game().num_groups(); },
                            "Nodes of an observation: the colocation groups, placed one per step.")
      .def_property_readonly("num_edges", [](const T& e) { return e.game().edge_src().size(); })
      .def_property_readonly("num_devices", [](const T& e) { return e.game().num_devices(); })
      .def_property_readonly("num_actions", [](const T& e) { return e.game().num_actions(); })
      .def_property_readonly("node_feature_dim", [](const T&) { return static_cast<int>(kNodeFeatureDim); })
      .def_property_readonly("device_feature_dim", [](const T&) { return static_cast<int>(kDeviceFeatureDim); })
      .def_property_readonly("mdp", [](const T& e) { return std::string(ToString(e.game().kind())); })
      .def_property_readonly("reference_time", [](const T& e) { return e.game().reference_time(); },
                             "Step time on the fastest single device (seconds): the unit of rewards.");
}

}  // namespace

void BindEnv(py::module_& m) {
  py::class_<PlacementEnv> env(m, "_PlacementEnv");
  env.def(py::init([](std::shared_ptr<Graph> g, std::shared_ptr<Topology> t, const std::string& mdp, uint64_t seed,
                      const std::string& initial, double oom_penalty, bool memory_mask, bool dp,
                      std::optional<CostModel> costs) {
            return PlacementEnv(MakeGame(g, t, mdp, initial, oom_penalty, memory_mask, dp, costs), seed);
          }),
          py::arg("graph"), py::arg("topology"), py::arg("mdp") = "one-shot", py::arg("seed") = 0, py::kw_only(),
          py::arg("initial_placement") = "single", py::arg("oom_penalty") = 1.0, py::arg("memory_aware_mask") = true,
          py::arg("data_parallel_action") = false, py::arg("costs") = py::none())
      .def("reset", &PlacementEnv::Reset, py::kw_only(), py::arg("seed") = py::none(),
           "Starts an episode: (obs, info). A seed re-seeds the generator the episode seeds are drawn from.")
      .def("step", &PlacementEnv::Step, py::arg("action"),
           "Places (one-shot) or moves (iterative) the current node: (obs, reward, terminated, truncated, info). "
           "An illegal action raises ValueError and changes nothing.")
      .def("strategy", &PlacementEnv::CurrentStrategy, "The strategy of the current (complete) placement.");
  DefSizes(env);

  py::class_<PlacementVecEnv> vec(m, "_PlacementVecEnv");
  vec.def(py::init([](std::shared_ptr<Graph> g, std::shared_ptr<Topology> t, int32_t num_envs, const std::string& mdp,
                      uint64_t seed, int32_t num_threads, const std::string& initial, double oom_penalty,
                      bool memory_mask, bool dp, std::optional<CostModel> costs) {
            return PlacementVecEnv(MakeGame(g, t, mdp, initial, oom_penalty, memory_mask, dp, costs), num_envs, seed,
                                   num_threads);
          }),
          py::arg("graph"), py::arg("topology"), py::arg("num_envs"), py::arg("mdp") = "one-shot",
          py::arg("seed") = 0, py::arg("num_threads") = 0, py::kw_only(), py::arg("initial_placement") = "single",
          py::arg("oom_penalty") = 1.0, py::arg("memory_aware_mask") = true, py::arg("data_parallel_action") = false,
          py::arg("costs") = py::none())
      .def("reset", &PlacementVecEnv::Reset, py::kw_only(), py::arg("seed") = py::none(),
           "Starts every env: env i's episode seeds come from seed + i; without a seed the last one is reused.")
      .def("step", &PlacementVecEnv::Step, py::arg("actions"),
           "Steps every env on C++ threads without the GIL; finished episodes restart in the same step.")
      .def_property_readonly("num_envs", &PlacementVecEnv::num_envs)
      .def_property_readonly("num_threads", &PlacementVecEnv::num_threads);
  DefSizes(vec);
}

}  // namespace devplace::python
