// Multi-process execution over c10d (Gloo on loopback): two ranks (child processes of exec_rank_helper) compute
// exactly what one process computes on one device, for an MLP, a CNN and an attention/LSTM sequence model placed
// and for an MLP and a CNN with every op split over both processes; a rank
// killed mid-step makes the other exit with a one-line error within 30 s; a rendezvous nobody joins times out
// with a one-line error. Also the device-to-rank maps.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "core/graph_json.h"
#include "core/strategy_json.h"
#include "core/topology_yaml.h"
#include "datasets/layers.h"
#include "exec/multiprocess.h"
#include "exec/process_calibration.h"
#include "tests/testing/env_fixtures.h"
#include "tests/testing/exec_graphs.h"
#include "tests/testing/exec_ranks.h"
#include "tests/testing/ranks.h"

namespace devplace {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
const std::string kTopology = DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml";

using testing::FreeLoopbackPort;
using testing::RankProcess;
using testing::ReadText;
using testing::WaitRank;

// Starts exec_rank_helper as `rank` of `world` with `args` (after the program name), stderr to a file in `dir`.
RankProcess Spawn(int rank, int world, int port, const std::vector<std::string>& args, const std::string& dir) {
  return testing::SpawnRank(DEVPLACE_EXEC_RANK_HELPER, args, rank, world, port,
                            dir + "/rank" + std::to_string(rank) + ".err");
}

std::string TempDir(const std::string& name) {
  const std::string dir = (fs::temp_directory_path() / ("devplace-mp-" + name + "-" + std::to_string(::getpid())))
                              .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Writes graph and strategy for the helper; returns the argument prefix GRAPH TOPOLOGY STRATEGY.
std::vector<std::string> WriteInputs(const Graph& g, const Strategy& s, const std::string& dir) {
  const Topology t = testing::CpuLocal();
  EXPECT_TRUE(WriteGraphFile(g, dir + "/g.json").ok());
  EXPECT_TRUE(WriteStrategyFile(s, g, t, dir + "/p.json").ok());
  return {dir + "/g.json", kTopology, dir + "/p.json"};
}

// Two ranks running `spread` on `topology` (one device each, or one host each), against one process with every
// op on device 0 (with `same_strategy`: one process running `spread`).
void ExpectSameNumbersAsOneDevice(const Graph& g, const std::string& name, const Strategy& spread,
                                  const std::string& topology = kTopology, bool same_strategy = false) {
  const std::string dir = TempDir(name);
  Expected<Topology> machine = ReadTopologyFile(topology);
  ASSERT_TRUE(machine.ok()) << machine.error().message;
  const Topology& t = *machine;
  EXPECT_TRUE(WriteGraphFile(g, dir + "/g.json").ok());
  EXPECT_TRUE(WriteStrategyFile(spread, g, t, dir + "/p.json").ok());
  std::vector<std::string> args{dir + "/g.json", topology, dir + "/p.json", dir + "/sums.txt", "2", "60"};
  const int port = FreeLoopbackPort();
  RankProcess r0 = Spawn(0, 2, port, args, dir), r1 = Spawn(1, 2, port, args, dir);
  ExecOptions options;
  options.warmup_steps = 0;
  options.timed_steps = 2;
  options.backend = "cpu";
  options.record_checksums = true;
  Expected<ExecResult> one = ExecuteStrategy(g, t, same_strategy ? spread : Strategy::AllOn(g.num_ops(), 0), options);
  ASSERT_TRUE(one.ok()) << one.error().message;
  ASSERT_EQ(WaitRank(r0, std::chrono::seconds(120)), 0) << ReadText(r0.stderr_path);
  ASSERT_EQ(WaitRank(r1, std::chrono::seconds(20)), 0) << ReadText(r1.stderr_path);
  std::ifstream in(dir + "/sums.txt");
  int32_t nonzero = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    double two = 0.0;
    ASSERT_TRUE(in >> two) << "missing checksum of op " << op;
    const double want = one->op_checksums[op];
    EXPECT_LE(std::abs(two - want), 1e-5 * std::max(1.0, std::abs(want))) << g.op(op).name;
    nonzero += want != 0.0;
  }
  EXPECT_GT(nonzero, g.num_ops() / 2);  // the checksums do see the values
  fs::remove_all(dir);
}

// Colocation groups round-robin over `devices` devices.
Strategy SpreadOver(const Graph& g, int32_t devices) {
  std::map<std::string, DeviceId> group_device;
  std::vector<DeviceId> placement;
  for (const Op& op : g.ops())
    placement.push_back(
        group_device.emplace(op.colocation, static_cast<DeviceId>(group_device.size() % devices)).first->second);
  return Strategy::FromPlacement(placement);
}

TEST(MultiProcess, TwoProcessesComputeWhatOneDeviceComputes) {
  for (const auto& [name, g] : {std::pair<std::string, Graph>{"mlp", envtest::MlpTrainingGraph(3)},
                                {"cnn", testing::ConvTrainingGraph()}, {"seq", testing::SequenceTrainingGraph()}})
    ExpectSameNumbersAsOneDevice(g, name, testing::SpreadGroups(g));
}

Strategy SplitEveryOp(const Graph& g) {
  Strategy split = Strategy::AllOn(g.num_ops(), 0);
  for (OpId op = 0; op < g.num_ops(); ++op)
    if (std::optional<OpConfig> c = SplitConfig(g.op(op), {0, 1})) split.configs[op] = *c;
    else split.configs[op].devices = {0, 1};  // too small to split: run whole on both (copies)
  return split;
}

// Every op split over both devices (along its sample dimension where it has one, else its first dimension
// of two or more), so each process runs a part of every op: boxes, collective chunks and the updated weights cross
// the processes. Two processes compute what one process computes for the same strategy (which equals one device's
// step where the parts are exact: tests/exec/partition_test.cc, also as two ranks; batch normalisation, e.g., uses
// each part's own statistics).
TEST(MultiProcess, TwoProcessesRunAStrategyThatSplitsEveryOp) {
  for (const auto& [name, g] : {std::pair<std::string, Graph>{"mlp-split", envtest::MlpTrainingGraph(3)},
                                {"cnn-split", testing::ConvTrainingGraph()},
                                {"seq-split", testing::SequenceTrainingGraph()}}) {
    ExpectSameNumbersAsOneDevice(g, name, SplitEveryOp(g), kTopology, true);
  }
}

// One process per host, two devices each: tensors cross devices inside a rank (copies) and between the ranks.
TEST(MultiProcess, TwoHostsOfTwoDevicesComputeWhatOneDeviceComputes) {
  const std::string dir = TempDir("hosts");
  std::ofstream(dir + "/two-hosts.yaml") << "name: two-hosts\ndevices:\n"
                                            "  - {name: \"cpu{i}\", count: 2, kind: cpu, host: a, peak_tflops: 0.08, "
                                            "memory_bandwidth_gbs: 10, memory_gib: 8}\n"
                                            "  - {name: \"cpu{i}\", count: 2, index_from: 2, kind: cpu, host: b, "
                                            "peak_tflops: 0.08, memory_bandwidth_gbs: 10, memory_gib: 8}\n"
                                            "switches:\n  - {name: net}\n"
                                            "links:\n  - {hub: net, nodes: [cpu0, cpu1, cpu2, cpu3], "
                                            "bandwidth_gbs: 5, latency_us: 5, kind: memcpy}\n";
  const Graph g = testing::ConvTrainingGraph();
  ExpectSameNumbersAsOneDevice(g, "hosts-run", SpreadOver(g, 4), dir + "/two-hosts.yaml");
  fs::remove_all(dir);
}

// Kills rank `victim` once both ranks are stepping; the survivor must exit non-zero within 30 s, saying so in
// one line.
// With `split`, every op is split over both processes.
void ExpectKilledPeerStopsTheOther(int victim, bool split = false) {
  const std::string dir = TempDir("kill" + std::to_string(victim) + (split ? "-split" : ""));
  const Graph g = testing::ConvTrainingGraph();
  std::vector<std::string> args = WriteInputs(g, split ? SplitEveryOp(g) : testing::SpreadGroups(g), dir);
  for (const std::string& a : {dir + "/sums.txt", std::string("100000"), std::string("20")}) args.push_back(a);
  const int port = FreeLoopbackPort();
  std::vector<std::string> a0 = args, a1 = args;
  a0.push_back(dir + "/ready0");
  a1.push_back(dir + "/ready1");
  RankProcess ranks[2] = {Spawn(0, 2, port, a0, dir), Spawn(1, 2, port, a1, dir)};
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (!(fs::exists(dir + "/ready0") && fs::exists(dir + "/ready1")) && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(fs::exists(dir + "/ready0") && fs::exists(dir + "/ready1")) << ReadText(ranks[0].stderr_path);
  ::kill(ranks[victim].pid, SIGKILL);
  const auto killed_at = Clock::now();
  const RankProcess& other = ranks[1 - victim];
  EXPECT_EQ(WaitRank(other, std::chrono::seconds(30)), 1) << ReadText(other.stderr_path);
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - killed_at).count(), 30.0);
  WaitRank(ranks[victim], std::chrono::seconds(5));
  const std::string err = ReadText(other.stderr_path);
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  EXPECT_NE(err.find("rank " + std::to_string(1 - victim) + " of 2"), std::string::npos) << err;
  fs::remove_all(dir);
}

TEST(MultiProcess, AKilledPeerStopsTheOtherRankWithOneLine) {
  ExpectKilledPeerStopsTheOther(1);
  ExpectKilledPeerStopsTheOther(0);  // the store's host
  ExpectKilledPeerStopsTheOther(1, true);  // partitioned: sends, arrivals and collective chunks under way
}

TEST(MultiProcess, ARendezvousNobodyJoinsTimesOutWithOneLine) {
  const std::string dir = TempDir("alone");
  const Graph g = envtest::MlpTrainingGraph(2);
  std::vector<std::string> args = WriteInputs(g, testing::SpreadGroups(g), dir);
  for (const std::string& a : {dir + "/sums.txt", std::string("1"), std::string("2")}) args.push_back(a);
  for (int rank : {0, 1}) {
    const auto start = Clock::now();
    RankProcess alone = Spawn(rank, 2, FreeLoopbackPort(), args, dir);
    EXPECT_EQ(WaitRank(alone, std::chrono::seconds(30)), 1);
    EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 20.0);
    const std::string err = ReadText(alone.stderr_path);
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("rank " + std::to_string(rank) + " of 2"), std::string::npos) << err;
    EXPECT_NE(err.find("rendezvous"), std::string::npos) << err;
  }
  fs::remove_all(dir);
}

// Two ranks measure sends, all-reduces, all-gathers and the executor's own messages (a real short calibration);
// the fits are positive and the links between the ranks' devices take the message fit.
TEST(MultiProcess, CalibratesTheGroupIntoTheLinksBetweenRanks) {
  const std::string dir = TempDir("calibrate");
  const int port = FreeLoopbackPort();
  const std::vector<std::string> args{"--calibrate", dir + "/fits.txt", "60",
                                      DEVPLACE_SOURCE_DIR "/configs/topologies/cpu-local.yaml"};
  RankProcess r0 = Spawn(0, 2, port, args, dir), r1 = Spawn(1, 2, port, args, dir);
  ASSERT_EQ(WaitRank(r0, std::chrono::seconds(120)), 0) << ReadText(r0.stderr_path);
  ASSERT_EQ(WaitRank(r1, std::chrono::seconds(20)), 0) << ReadText(r1.stderr_path);
  std::ifstream in(dir + "/fits.txt");
  GroupCalibration c;
  c.processes = 2;
  for (PairCalibration* fit : {&c.send, &c.all_reduce, &c.all_gather, &c.messages}) {
    std::string name;
    size_t points = 0;
    ASSERT_TRUE(in >> name >> fit->latency >> fit->bandwidth >> points);
    EXPECT_EQ(points, 5u) << name;  // 1, 4, 16, 64, 256 KiB
    EXPECT_GT(fit->latency, 0.0) << name;
    EXPECT_LT(fit->latency, 0.1) << name;
    EXPECT_GT(fit->bandwidth, 1e6) << name;
    fit->points.resize(points);
  }
  const Topology t = testing::CpuLocal();
  Expected<Topology> applied = ApplyGroupCalibration(t, {0, 1}, c);
  ASSERT_TRUE(applied.ok()) << applied.error().message;
  const double hops = static_cast<double>(t.route(0, 1).size());
  for (LinkId l = 0; l < applied->num_links(); ++l) {  // every link lies between cpu0 and cpu1
    const Link& link = applied->link(l);
    EXPECT_NEAR((link.latency + link.message_cost) * hops, c.messages.latency, 1e-12);
    EXPECT_DOUBLE_EQ(link.bandwidth / hops, c.messages.bandwidth);
    // a ring step between the ranks is a step of the group's all-reduce
    EXPECT_NEAR((link.latency + link.step_cost) * hops, std::max(c.all_reduce.latency, link.latency * hops), 1e-12);
    EXPECT_DOUBLE_EQ(link.step_bandwidth / hops, c.all_reduce.bandwidth);
  }
  GroupCalibration absurd = c;  // an unphysical all-reduce fit is refused, not written
  absurd.all_reduce.bandwidth = 3e14;
  Expected<Topology> refused = ApplyGroupCalibration(t, {0, 1}, absurd);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("all-reduce steps: no physical fit"), std::string::npos)
      << refused.error().message;
  Expected<Topology> same_rank = ApplyGroupCalibration(t, {0, 0}, c);  // nothing crosses processes
  ASSERT_TRUE(same_rank.ok());
  for (LinkId l = 0; l < t.num_links(); ++l) EXPECT_EQ(same_rank->link(l).latency, t.link(l).latency);
  c.messages.points.clear();
  EXPECT_FALSE(ApplyGroupCalibration(t, {0, 1}, c).ok());  // without the executor's messages
  fs::remove_all(dir);
}

// A tensor read by k ops on another rank crosses once (one message per tensor and destination device), as it is
// copied once in one process; the numbers are those of one process.
TEST(MultiProcess, ATensorReadByKOpsOnAnotherRankIsSentOnce) {
  LayerBuilder b("fan");
  const OpId a = b.Relu(b.Input("x", {8, 16}), "a");
  for (int k = 0; k < 3; ++k) b.Relu(a, "c" + std::to_string(k));
  const Graph g = std::move(b).BuildTraining().value();
  std::vector<DeviceId> devices;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const Op& o = g.op(op);
    devices.push_back((o.forward_op.empty() ? o.name : o.forward_op).find("c") != std::string::npos ? 1 : 0);
  }
  const Strategy strategy = Strategy::FromPlacement(devices);
  ExecOptions options;
  options.warmup_steps = 0;
  options.timed_steps = 1;
  options.backend = "cpu";
  options.record_checksums = true;
  const Topology t = testing::CpuLocal();
  Expected<ExecResult> one = ExecuteStrategy(g, t, strategy, options);
  ASSERT_TRUE(one.ok()) << one.error().message;
  const std::vector<Expected<ExecResult>> ranks = testing::RunAsTwoRanks(g, t, strategy, options);
  ASSERT_TRUE(ranks[0].ok()) << ranks[0].error().message;
  ASSERT_TRUE(ranks[1].ok()) << ranks[1].error().message;
  int32_t crossing = 0;  // edges between the ranks
  for (int32_t e = 0; e < g.num_edges(); ++e) crossing += devices[g.edge(e).src] != devices[g.edge(e).dst];
  EXPECT_EQ(ranks[0]->num_copies, one->num_copies);
  // a's output, read by c0..c2 and their backward ops (6 edges), is one message; the 3 gradients back are 3.
  EXPECT_EQ(crossing, 9);
  EXPECT_EQ(ranks[0]->num_copies, 4);
  for (OpId op = 0; op < g.num_ops(); ++op) EXPECT_EQ(ranks[0]->op_checksums[op], one->op_checksums[op]) << op;
}

TEST(MultiProcess, DevicesMapToRanksPerDevicePerHostOrPerUsedDevice) {
  const Topology t = testing::CpuLocal();  // two devices on one host
  const Graph g = envtest::MlpTrainingGraph(2);
  const Strategy spread = testing::SpreadGroups(g);
  EXPECT_EQ(*RankOfDevices(t, spread, 2), (std::vector<int32_t>{0, 1}));
  Expected<std::vector<int32_t>> one_host = RankOfDevices(t, Strategy::AllOn(g.num_ops(), 1), 1);
  ASSERT_TRUE(one_host.ok());
  EXPECT_EQ(*one_host, (std::vector<int32_t>{0, 0}));
  // 4 hosts x 4 GPUs: 16 ranks run a device each, 4 ranks a host each; 2 ranks the two devices a strategy uses.
  const Topology cluster = *ReadTopologyFile(DEVPLACE_SOURCE_DIR "/configs/topologies/p100-4x4-ib.yaml");
  Strategy two_gpus = Strategy::AllOn(g.num_ops(), 5);
  two_gpus.configs[0].devices = {9};
  EXPECT_EQ((*RankOfDevices(cluster, two_gpus, 16))[13], 13);
  const std::vector<int32_t> per_host = *RankOfDevices(cluster, two_gpus, 4);
  EXPECT_EQ(per_host, (std::vector<int32_t>{0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}));
  const std::vector<int32_t> per_used = *RankOfDevices(cluster, two_gpus, 2);
  EXPECT_EQ(per_used[5], 0);
  EXPECT_EQ(per_used[9], 1);
  Expected<std::vector<int32_t>> three = RankOfDevices(t, spread, 3);
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.error().message,
            "WORLD_SIZE=3: expected one process per device (2), per host (1) or per device the strategy uses (2) of "
            "topology 'cpu-local'");
}

}  // namespace
}  // namespace devplace
