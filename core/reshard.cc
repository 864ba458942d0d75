#include "core/reshard.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <string>
#include <tuple>

namespace devplace {

void TileOf(const std::vector<int64_t>& shape, const ShardingSpec& spec, const Mesh& mesh, int64_t flat,
            std::vector<int64_t>* lo, std::vector<int64_t>* hi) {
  const std::vector<int64_t> coords = mesh.coords_of(flat);
  lo->assign(shape.size(), 0);
  hi->assign(shape.begin(), shape.end());
  for (size_t a = 0; a < shape.size(); ++a) {
    int64_t index = 0, count = 1;
    for (int32_t m : spec.dims[a]) {
      index = index * mesh.shape[m] + coords[m];
      count *= mesh.shape[m];
    }
    (*lo)[a] = shape[a] * index / count;
    (*hi)[a] = shape[a] * (index + 1) / count;
  }
}

namespace {

// The sorted, distinct tile boundaries of every device of `mesh` along each tensor axis (added to `cuts`).
void AddCuts(const std::vector<int64_t>& shape, const ShardingSpec& spec, const Mesh& mesh,
             std::vector<std::vector<int64_t>>* cuts) {
  std::vector<int64_t> lo, hi;
  for (int64_t f = 0; f < mesh.size(); ++f) {
    TileOf(shape, spec, mesh, f, &lo, &hi);
    for (size_t a = 0; a < shape.size(); ++a) {
      (*cuts)[a].push_back(lo[a]);
      (*cuts)[a].push_back(hi[a]);
    }
  }
}

// The devices of `mesh` whose tile under `spec` contains the box [lo, hi), ascending.
std::vector<DeviceId> Holders(const std::vector<int64_t>& shape, const ShardingSpec& spec, const Mesh& mesh,
                              const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  std::vector<DeviceId> out;
  std::vector<int64_t> tlo, thi;
  for (int64_t f = 0; f < mesh.size(); ++f) {
    TileOf(shape, spec, mesh, f, &tlo, &thi);
    bool inside = true;
    for (size_t a = 0; a < shape.size() && inside; ++a) inside = tlo[a] <= lo[a] && hi[a] <= thi[a];
    if (inside) out.push_back(mesh.devices[f]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

Expected<std::vector<UnitTask>> UnitTasks(const std::vector<int64_t>& shape, int64_t elem_bytes,
                                          const Mesh& src_mesh, const ShardingSpec& src_spec, const Mesh& dst_mesh,
                                          const ShardingSpec& dst_spec) {
  if (elem_bytes < 1) return Error{"element size must be >= 1 byte"};
  for (auto [mesh, spec, side] : {std::tuple{&src_mesh, &src_spec, "source"}, {&dst_mesh, &dst_spec, "destination"}}) {
    if (Status s = ValidateSpec(*spec, shape, *mesh, /*allow_padding=*/true); !s.ok())
      return Error{std::string(side) + " spec " + AlpaSpecText(*spec) + ": " + s.error().message};
    if (!spec->partial.empty())
      return Error{std::string(side) + " spec " + AlpaSpecText(*spec) + " is partial: reduce it before moving it"};
  }
  std::vector<std::vector<int64_t>> cuts(shape.size());
  AddCuts(shape, src_spec, src_mesh, &cuts);
  AddCuts(shape, dst_spec, dst_mesh, &cuts);
  for (auto& c : cuts) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
  }
  std::vector<UnitTask> tasks;
  std::vector<size_t> cell(shape.size(), 0);  // row-major over the cells between consecutive cuts
  while (true) {
    UnitTask task;
    task.bytes = elem_bytes;
    for (size_t a = 0; a < shape.size(); ++a) {
      task.lo.push_back(cuts[a][cell[a]]);
      task.hi.push_back(cuts[a][cell[a] + 1]);
      task.bytes *= task.hi[a] - task.lo[a];
    }
    task.senders = Holders(shape, src_spec, src_mesh, task.lo, task.hi);
    for (DeviceId d : Holders(shape, dst_spec, dst_mesh, task.lo, task.hi))
      if (!std::binary_search(task.senders.begin(), task.senders.end(), d)) task.receivers.push_back(d);
    if (!task.receivers.empty() && task.bytes > 0) tasks.push_back(std::move(task));
    size_t a = shape.size();
    while (a > 0 && ++cell[a - 1] + 1 == cuts[a - 1].size()) cell[--a] = 0;
    if (a == 0) break;
  }
  return tasks;
}

namespace {
constexpr std::string_view kMethodNames[] = {"send-recv", "alpa", "global-allgather", "broadcast"};
constexpr std::string_view kBalanceNames[] = {"naive", "lb-only", "dfs", "random-greedy", "ours"};

template <class Enum, size_t N>
Expected<Enum> ParseName(std::string_view text, const std::string_view (&names)[N], const char* what) {
  std::string all;
  for (size_t i = 0; i < N; ++i) {
    if (text == names[i]) return static_cast<Enum>(i);
    all.append(i ? ", " : "").append(names[i]);
  }
  return Error{std::string("unknown ") + what + " '" + std::string(text) + "' (expected one of " + all + ")"};
}
}  // namespace

std::string_view ToString(ReshardMethod method) { return kMethodNames[static_cast<size_t>(method)]; }
std::string_view ToString(ReshardBalance balance) { return kBalanceNames[static_cast<size_t>(balance)]; }
Expected<ReshardMethod> ParseReshardMethod(std::string_view text) {
  return ParseName<ReshardMethod>(text, kMethodNames, "resharding method");
}
Expected<ReshardBalance> ParseReshardBalance(std::string_view text) {
  return ParseName<ReshardBalance>(text, kBalanceNames, "balancer");
}

Expected<ShardingSpec> ParseAlpaSpec(std::string_view text, const Mesh& mesh) {
  ShardingSpec spec;
  size_t pos = 0;
  while (true) {
    const size_t end = std::min(text.find(',', pos), text.size());
    const std::string entry(text.substr(pos, end - pos));
    const std::string where = "spec '" + std::string(text) + "': entry " + std::to_string(spec.dims.size()) + " '" +
                              entry + "'";
    std::vector<int32_t> axes;
    if (entry.size() >= 2 && entry[0] == 'S') {
      for (size_t i = 1; i < entry.size(); ++i) {
        const int32_t m = entry[i] - '0';
        if (m < 0 || m >= mesh.rank())
          return Error{where + ": mesh axis " + entry.substr(i, 1) + " is not one of the mesh's " +
                       std::to_string(mesh.rank()) + " axes"};
        axes.push_back(m);
      }
    } else if (entry != "R") {
      return Error{where + ": expected R or S followed by mesh axis indices (e.g. S0, S01)"};
    }
    spec.dims.push_back(std::move(axes));
    if (end == text.size()) break;
    pos = end + 1;
  }
  return spec;
}

std::string AlpaSpecText(const ShardingSpec& spec) {
  std::string out;
  for (size_t a = 0; a < spec.dims.size(); ++a) {
    if (a > 0) out += ',';
    if (spec.dims[a].empty()) out += 'R';
    else out += 'S';
    for (int32_t m : spec.dims[a]) out += std::to_string(m);
  }
  return out;
}

Expected<Mesh> MeshAt(std::string_view text, const Topology& topology, std::string name) {
  const size_t at = text.find('@');
  int64_t first = 0;
  if (at != std::string_view::npos) {
    const std::string_view k = text.substr(at + 1);
    auto [ptr, ec] = std::from_chars(k.data(), k.data() + k.size(), first);
    if (ec != std::errc() || ptr != k.data() + k.size() || first < 0)
      return Error{"mesh '" + std::string(text) + "': expected SHAPE@FIRST_DEVICE, e.g. 2x4@0 or 1x4@4"};
  }
  const std::string_view shape = text.substr(0, std::min(at, text.size()));
  std::vector<std::string> axes;
  for (size_t i = 0, n = std::count(shape.begin(), shape.end(), 'x') + 1; i < n; ++i)
    axes.push_back(std::string(1, 'a').append(std::to_string(i)));
  Expected<Mesh> mesh = ParseMeshShorthandFor(shape, axes, topology, std::move(name));
  if (!mesh.ok()) return mesh.error();
  if (first + mesh->size() > topology.num_devices())
    return Error{"mesh '" + std::string(text) + "': devices " + std::to_string(first) + ".." +
                 std::to_string(first + mesh->size() - 1) + " run past topology '" + topology.name() + "' (" +
                 std::to_string(topology.num_devices()) + " devices)"};
  // An explicit device range, in id order (Alpa's meshes: a host's GPUs by index).
  mesh->devices.resize(static_cast<size_t>(mesh->size()));
  std::iota(mesh->devices.begin(), mesh->devices.end(), static_cast<DeviceId>(first));
  if (Status st = ValidateMesh(*mesh, topology); !st.ok()) return st.error();
  return mesh;
}

}  // namespace devplace
