// Pipeline schedules in the simulator: textbook bubbles, eager-1F1B against 1F1B, activation memory by
// schedule, data-parallel stages, and properties of the schedule orders.
#include "sim/pipeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "datasets/zoo.h"
#include "tests/testing/sim_fixtures.h"

namespace devplace {
namespace {

// prefix followed by the decimal digits of i (appending avoids GCC 12's false -Wrestrict on "literal" + std::string).
std::string Named(const char* prefix, int64_t i) {
  std::string s = prefix;
  s += std::to_string(i);
  return s;
}

using testing::FixedRateCost;
using testing::FullyConnected;

constexpr double kRate = 1e-9;     // seconds per FLOP of the test cost model
constexpr double kFlops = 1e6;     // forward FLOPs of one layer: 1 ms
constexpr int64_t kBatch = 64, kWidth = 256;

// A training chain of `layers` layers (forward ops f<i>, backward ops f<i>/grad at twice the FLOPs, kept
// activations and gradient edges as DeriveTrainingGraph makes them), with `param_bytes` per layer (and update
// ops when > 0). Each op has a sample dimension of kBatch.
Graph Chain(int layers, int64_t param_bytes = 0) {
  GraphBuilder g("chain");
  auto op = [&](int layer, OpRole role, double flops) {
    const std::string forward = Named("f", layer);
    Op o = testing::MakeOp(role == OpRole::kForward ? forward : forward + "/grad", flops, {kBatch, kWidth},
                           role == OpRole::kForward ? param_bytes : 0);
    o.role = role;
    o.layer = Named("layer", layer);
    o.forward_op = role == OpRole::kForward ? "" : forward;
    o.dims = {PartitionDim{DimKind::kSample, 0, 0, kBatch}};
    return g.add_op(o);
  };
  std::vector<OpId> f, b, u;
  for (int i = 0; i < layers; ++i) f.push_back(op(i, OpRole::kForward, kFlops));
  for (int i = layers - 1; i >= 0; --i) b.insert(b.begin(), op(i, OpRole::kBackward, 2 * kFlops));
  if (param_bytes > 0)
    for (int i = 0; i < layers; ++i) {
      const std::string name = Named("f", i);
      Op o = testing::MakeOp(name + "/update", 10.0 * static_cast<double>(param_bytes) / 4, {param_bytes / 4});
      o.role = OpRole::kUpdate;
      o.forward_op = name;
      o.layer = Named("layer", i);
      u.push_back(g.add_op(o));
    }
  for (int i = 0; i < layers; ++i) {
    g.add_edge(f[i], b[i]);
    if (i + 1 < layers) {
      g.add_edge(f[i], f[i + 1]);
      g.add_edge(f[i], b[i + 1]);
      g.add_edge(b[i + 1], b[i]);
    }
    if (param_bytes > 0) g.add_edge(b[i], u[i], param_bytes);
  }
  return std::move(g).Build().value();
}

// `stages` stages of equal layer counts, stage s on devices [s * width, (s + 1) * width).
PipelinePlan EqualStages(const Graph& graph, int layers, int stages, int microbatches, PipelineSchedule schedule,
                         int width = 1) {
  PipelinePlan plan;
  plan.microbatches = microbatches;
  plan.schedule = schedule;
  for (int s = 0; s < stages; ++s) {
    PipelineStage stage;
    stage.name = Named("s", s);
    stage.ops.first_op = graph.find(Named("f", s * layers / stages));
    stage.ops.last_op = graph.find(Named("f", (s + 1) * layers / stages - 1));
    for (int j = 0; j < width; ++j) stage.devices.push_back(s * width + j);
    plan.stages.push_back(stage);
  }
  return plan;
}

PipelineResult Simulated(const Graph& graph, const Topology& topology, const PipelinePlan& plan,
                         SimOptions options = {}) {
  Expected<PipelineResult> r = SimulatePipeline(graph, topology, plan, FixedRateCost(kRate), options);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : PipelineResult{};
}

double Textbook(int stages, int microbatches) {
  return static_cast<double>(stages - 1) / static_cast<double>(microbatches + stages - 1);
}

TEST(Pipeline, EqualStagesWithFreeLinksHaveTheTextbookBubble) {
  const Topology free = FullyConnected(8, 1e30, 0.0);
  for (int stages : {2, 4})
    for (int microbatches : {1, 4, 8})
      for (PipelineSchedule schedule : {PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB}) {
        const Graph graph = Chain(8);
        const PipelineResult r = Simulated(graph, free, EqualStages(graph, 8, stages, microbatches, schedule));
        const double per_microbatch = 3 * kFlops * kRate * 8 / stages / microbatches;  // forward + backward
        SCOPED_TRACE(std::string(ToString(schedule)) + " S=" + std::to_string(stages) + " M=" +
                     std::to_string(microbatches));
        EXPECT_NEAR(r.bubble_fraction, Textbook(stages, microbatches), 1e-6);
        EXPECT_NEAR(r.sim.step_time, (microbatches + stages - 1) * per_microbatch, 1e-9);
        for (const PipelineStageStats& s : r.stages) EXPECT_NEAR(s.bubble_fraction, r.bubble_fraction, 1e-6);
      }
}

TEST(Pipeline, EagerOneFOneBEqualsOneFOneBOnFreeLinksAndWinsOnSlowOnes) {
  const Graph graph = Chain(8);
  for (int stages : {2, 4}) {
    SCOPED_TRACE("S=" + std::to_string(stages));
    const Topology free = FullyConnected(4, 1e30, 0.0);
    const PipelineResult a = Simulated(graph, free, EqualStages(graph, 8, stages, 8, PipelineSchedule::kOneFOneB));
    const PipelineResult b = Simulated(graph, free, EqualStages(graph, 8, stages, 8, PipelineSchedule::kEagerOneFOneB));
    EXPECT_NEAR(a.sim.step_time, b.sim.step_time, 1e-9);
    // Each transfer takes as long as a stage's forward of one micro-batch.
    const double forward = kFlops * kRate * 8 / stages / 8;
    const Topology slow = FullyConnected(4, 1e30, forward);
    const PipelineResult c = Simulated(graph, slow, EqualStages(graph, 8, stages, 8, PipelineSchedule::kOneFOneB));
    const PipelineResult d = Simulated(graph, slow, EqualStages(graph, 8, stages, 8, PipelineSchedule::kEagerOneFOneB));
    EXPECT_GT(c.sim.step_time, a.sim.step_time + forward);  // the links cost 1F1B more than one forward
    EXPECT_LT(d.sim.step_time, c.sim.step_time - forward);  // eager hides more than one forward's worth
  }
}

TEST(Pipeline, ActivationMemoryFollowsTheSchedule) {
  const Graph graph = Chain(8);
  const Topology free = FullyConnected(4, 1e30, 0.0);
  const int stages = 4, microbatches = 8;
  auto run = [&](PipelineSchedule schedule) {
    return Simulated(graph, free, EqualStages(graph, 8, stages, microbatches, schedule));
  };
  const PipelineResult gpipe = run(PipelineSchedule::kGPipe), one = run(PipelineSchedule::kOneFOneB),
                       eager = run(PipelineSchedule::kEagerOneFOneB);
  // Each stage keeps the outputs of its two layers for every micro-batch in flight.
  const int64_t per_microbatch = 2 * kBatch * kWidth * 4 / microbatches;
  for (int s = 0; s < stages; ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    EXPECT_EQ(gpipe.stages[s].activation_peak_bytes, microbatches * per_microbatch);
    EXPECT_EQ(one.stages[s].activation_peak_bytes, std::min(microbatches, stages - s) * per_microbatch);
    EXPECT_EQ(gpipe.stages[s].activation_peak_bytes - one.stages[s].activation_peak_bytes,
              (microbatches - std::min(microbatches, stages - s)) * per_microbatch);
    EXPECT_EQ(eager.stages[s].activation_peak_bytes,
              std::min(microbatches, 2 * (stages - s) - 1) * per_microbatch);
    EXPECT_EQ(one.stages[s].max_in_flight, std::min(microbatches, stages - s));
    EXPECT_GT(gpipe.stages[s].peak_bytes, one.stages[s].peak_bytes);
    EXPECT_GE(eager.stages[s].peak_bytes, one.stages[s].peak_bytes);
  }
}

TEST(Pipeline, ScheduleOrdersRunEveryMicrobatchOnceWithBoundedActivations) {
  for (PipelineSchedule schedule :
       {PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kEagerOneFOneB})
    for (int stages = 1; stages <= 6; ++stages)
      for (int microbatches = 1; microbatches <= 12; ++microbatches)
        for (int s = 0; s < stages; ++s) {
          const std::vector<StageStep> order = StageOrder(schedule, stages, s, microbatches);
          ASSERT_EQ(order.size(), 2u * microbatches);
          int next_f = 0, next_b = 0, in_flight = 0, peak = 0;
          for (const StageStep& step : order) {
            if (step.forward) {
              EXPECT_EQ(step.microbatch, next_f++);
              peak = std::max(peak, ++in_flight);
            } else {
              EXPECT_EQ(step.microbatch, next_b++);
              EXPECT_LT(step.microbatch, next_f);  // its forward ran before
              --in_flight;
            }
          }
          EXPECT_EQ(peak, WarmupForwards(schedule, stages, s, microbatches));
          EXPECT_LE(peak, microbatches);
        }
}

TEST(Pipeline, MoreMicrobatchesShrinkTheBubbleAndStagesNeverOverlapTheirWork) {
  const Graph graph = Chain(12);
  const Topology machine = FullyConnected(6, 1e9, 5e-6);
  for (PipelineSchedule schedule :
       {PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kEagerOneFOneB})
    for (int stages : {2, 3, 6}) {
      double previous = 1.0;
      for (int microbatches : {1, 2, 4, 8, 16}) {
        SimOptions options;
        options.keep_timeline = true;
        const PipelineResult r =
            Simulated(graph, machine, EqualStages(graph, 12, stages, microbatches, schedule), options);
        EXPECT_LT(r.bubble_fraction, previous);
        previous = r.bubble_fraction;
        // Lower bound: one stage's work; the bubble is at least the textbook one (links only add to it).
        const double work = 3 * kFlops * kRate * 12 / stages;
        EXPECT_GE(r.sim.step_time, work);
        EXPECT_GE(r.bubble_fraction, Textbook(stages, microbatches) - 1e-9);
        // Every device runs one task at a time, and each micro-batch's forward precedes its backward.
        std::vector<double> device_free(6, 0.0);
        std::set<std::pair<int, int>> forwarded;
        for (const PipelineTimelineTask& t : r.timeline) {
          if (t.resource >= 6) continue;
          EXPECT_GE(t.start, device_free[t.resource] - 1e-15);
          device_free[t.resource] = t.end;
          if (t.kind == PipelineTaskKind::kForward) forwarded.insert({t.stage, t.microbatch});
          if (t.kind == PipelineTaskKind::kBackward) {
            EXPECT_TRUE(forwarded.contains({t.stage, t.microbatch}));
          }
        }
        EXPECT_EQ(forwarded.size(), static_cast<size_t>(stages * microbatches));
      }
    }
}

TEST(Pipeline, DelayedWeightGradientsSendGradientsEarlier) {
  const Graph graph = Chain(8, 1 << 16);
  const Topology slow = FullyConnected(4, 1e30, 1e-3);
  PipelinePlan plan = EqualStages(graph, 8, 4, 8, PipelineSchedule::kOneFOneB);
  const PipelineResult plain = Simulated(graph, slow, plan);
  plan.delay_weight_gradients = true;
  const PipelineResult delayed = Simulated(graph, slow, plan);
  EXPECT_NEAR(delayed.stages[0].busy_seconds, plain.stages[0].busy_seconds, 1e-9);
  EXPECT_LT(delayed.sim.step_time, plain.sim.step_time);
}

TEST(Pipeline, DataParallelStagesSplitTheWorkAndAllReduceOncePerStep) {
  const int64_t params = 1 << 20;
  const Graph graph = Chain(4, params);
  const Topology machine = FullyConnected(4, 1e10, 1e-6);
  const PipelineResult one = Simulated(graph, machine, EqualStages(graph, 4, 2, 4, PipelineSchedule::kOneFOneB, 1));
  const PipelineResult two = Simulated(graph, machine, EqualStages(graph, 4, 2, 4, PipelineSchedule::kOneFOneB, 2));
  const double update = 2 * 10.0 * params / 4 * kRate;  // two layers' updates per stage
  // Micro-batches 1..3 add both layers' weight gradients into the sum on every device: 3 x bytes at the devices'
  // memory bandwidth (1e11 B/s) each, on one device or two alike.
  const double accumulate = (4 - 1) * 2 * 3.0 * params / 1e11;
  EXPECT_NEAR(one.stages[0].busy_seconds, 3 * kFlops * kRate * 2 + update + accumulate, 1e-9);
  EXPECT_NEAR(two.stages[0].busy_seconds, 3 * kFlops * kRate + update + accumulate, 1e-9);
  // Links carry the activations of f1 and their gradient (one batch-sized tensor each way, device i to device
  // i) and each stage's ring: 2 (k - 1) steps from each of k = 2 members of (2 layers' gradients) / k bytes.
  int64_t moved = 0;
  for (const LinkStats& l : two.sim.links) moved += l.bytes;
  EXPECT_EQ(moved, 2 * kBatch * kWidth * 4 + 2 * (2 * (2 - 1) * 2 * (2 * params / 2)));
  EXPECT_EQ(two.stages[0].max_in_flight, 2);
}

TEST(Pipeline, SameInputsGiveTheSameResult) {
  const Graph graph = Chain(8, 4096);
  const Topology machine = FullyConnected(4, 1e9, 2e-6);
  const PipelinePlan plan = EqualStages(graph, 8, 2, 6, PipelineSchedule::kEagerOneFOneB, 2);
  const PipelineResult a = Simulated(graph, machine, plan), b = Simulated(graph, machine, plan);
  EXPECT_EQ(a.sim.step_time, b.sim.step_time);
  for (size_t s = 0; s < a.stages.size(); ++s) EXPECT_EQ(a.stages[s].peak_bytes, b.stages[s].peak_bytes);
}

TEST(Pipeline, TraceNamesMicrobatchTasks) {
  const Graph graph = Chain(4);
  const Topology machine = FullyConnected(2, 1e9, 1e-6);
  const PipelinePlan plan = EqualStages(graph, 4, 2, 2, PipelineSchedule::kOneFOneB);
  EXPECT_FALSE(PipelineChromeTraceJson(Simulated(graph, machine, plan), plan, machine).ok());  // no timeline
  SimOptions options;
  options.keep_timeline = true;
  const Expected<std::string> trace = PipelineChromeTraceJson(Simulated(graph, machine, plan, options), plan, machine);
  ASSERT_TRUE(trace.ok());
  for (const char* name : {"\"F1\"", "\"B0\"", "\"act 1 s0->s1\"", "\"grad 0 s1->s0\""})
    EXPECT_NE(trace->find(name), std::string::npos) << name;
}

TEST(Pipeline, InvalidPlansAreRejectedNamingTheStage) {
  const Graph graph = Chain(4);
  const Topology machine = FullyConnected(2, 1e9, 1e-6);
  PipelinePlan plan = EqualStages(graph, 4, 2, 2, PipelineSchedule::kOneFOneB);
  plan.stages[1].devices = {0};
  const Expected<PipelineResult> r = SimulatePipeline(graph, machine, plan, FixedRateCost());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "stage 's1': device 'd0' is already used by stage 's0'");
}

// Bytes that crossed the links of kind "ethernet" (between the hosts of testing::TwoHosts).
int64_t EthernetBytes(const Topology& topology, const PipelineResult& r) {
  int64_t bytes = 0;
  for (LinkId l = 0; l < topology.num_links(); ++l)
    if (topology.link(l).kind == "ethernet") bytes += r.sim.links[l].bytes;
  return bytes;
}

// One device on host 0 feeds a stage of four devices on host 1 that holds its activations replicated ("R,R", as a
// tensor-parallel stage does): send/recv sends every slice over the hosts' link once per receiver, Alpa's method and
// the broadcast once; the gradients (held by all four, needed by one) cross once whatever the method.
TEST(Pipeline, TensorsCrossingStagesAreReshardedByTheChosenMethod) {
  const Graph graph = Chain(4);
  const Topology machine = testing::TwoHosts(4, 1e9, 1e-6);
  PipelinePlan plan;
  plan.microbatches = 4;
  plan.stages.push_back({"s0", {StageOps::Kind::kOpRange, graph.find("f0"), graph.find("f1"), "", ""}, {0}, {}, ""});
  plan.stages.push_back({"s1", {StageOps::Kind::kOpRange, graph.find("f2"), graph.find("f3"), "", ""},
                         {4, 5, 6, 7}, {2, 2}, "R,R"});
  const int64_t act = kBatch * kWidth * 4;  // f1's output, in all micro-batches
  const PipelineResult send = Simulated(graph, machine, plan);
  EXPECT_EQ(EthernetBytes(machine, send), 4 * act + act);
  plan.reshard.method = ReshardMethod::kAlpa;
  const PipelineResult alpa = Simulated(graph, machine, plan);
  EXPECT_EQ(EthernetBytes(machine, alpa), act + act);
  plan.reshard = {ReshardMethod::kBroadcast, ReshardBalance::kOurs, 16, false};
  const PipelineResult broadcast = Simulated(graph, machine, plan);
  EXPECT_EQ(EthernetBytes(machine, broadcast), act + act);
  EXPECT_LT(broadcast.sim.step_time, alpa.sim.step_time);
  EXPECT_LT(alpa.sim.step_time, send.sim.step_time);
  plan.reshard.signal_only = true;
  const PipelineResult signal = Simulated(graph, machine, plan);
  EXPECT_LT(signal.sim.step_time, broadcast.sim.step_time);
  // Each micro-batch's forward on s1 waits for its slice: with signals only, the step is the compute chain alone
  // plus latencies (s0: 4 x (1 + 2) ms of f0, f1; s1 a quarter of that per device, after s0's first forward).
  EXPECT_LT(signal.sim.step_time, 4 * 3 * 2 * kFlops * kRate + 1e-3);
}

// A stage of two devices whose layout splits the samples over one axis of its 2 x 2 mesh all-reduces its weight
// gradients in two groups of two, each a half of the weights; a fully sample-split stage in one group of four.
TEST(Pipeline, WeightGradientsAreAllReducedAmongTheDevicesHoldingTheSameShard) {
  const int64_t params = 1 << 20;
  const Graph graph = Chain(2, params);
  const Topology machine = FullyConnected(5, 1e10, 1e-6);
  PipelinePlan plan;
  plan.microbatches = 2;
  plan.stages.push_back({"s0", {StageOps::Kind::kOpRange, graph.find("f0"), graph.find("f0"), "", ""}, {0}, {}, ""});
  plan.stages.push_back({"s1", {StageOps::Kind::kOpRange, graph.find("f1"), graph.find("f1"), "", ""},
                         {1, 2, 3, 4}, {2, 2}, ""});
  auto ring_bytes = [&](const PipelineResult& r) {
    int64_t bytes = 0;
    for (const PipelineTimelineTask& t : r.timeline)
      if (t.kind == PipelineTaskKind::kAllReduce) bytes += t.bytes;
    return bytes;
  };
  SimOptions options;
  options.keep_timeline = true;
  // One ring of 4: 2 (4 - 1) steps from each member of params / 4 bytes.
  EXPECT_EQ(ring_bytes(Simulated(graph, machine, plan, options)), 4 * 2 * 3 * (params / 4));
  plan.stages[1].spec = "S0,R";  // two rings of 2 over axis 0, each of params / 2 (the weights' half over axis 1)
  EXPECT_EQ(ring_bytes(Simulated(graph, machine, plan, options)), 2 * (2 * 2 * 1 * (params / 2 / 2)));
  plan.stages[1].spec = "R,S01";  // every device its own quarter of the weights: nothing to all-reduce
  EXPECT_EQ(ring_bytes(Simulated(graph, machine, plan, options)), 0);
}

// The zoo's U-Transformer in four stages of six layers (8 micro-batches), stage s on devices [s w, (s + 1) w) with
// layout `spec`.
PipelinePlan UTransformerStages(int w, const std::string& spec) {
  PipelinePlan plan;
  plan.microbatches = 8;
  const std::pair<const char*, const char*> ranges[] = {{"input", "encoder/layer5"},
                                                        {"encoder/layer6", "encoder/layer11"},
                                                        {"decoder/layer0", "decoder/layer5"},
                                                        {"decoder/layer6", "head"}};
  for (int s = 0; s < 4; ++s) {
    PipelineStage& stage = plan.stages.emplace_back();
    stage.name = Named("s", s);
    stage.ops = {StageOps::Kind::kLayerRange, -1, -1, ranges[s].first, ranges[s].second};
    for (int j = 0; j < w; ++j) stage.devices.push_back(s * w + j);
    stage.spec = spec;
  }
  return plan;
}

// The zoo's U-Transformer in four stages over two hosts (encoder on h0, decoder on h1): the U-shaped skip
// connections run from each encoder stage to its mirrored decoder stage, over the hosts' slow link.
TEST(Pipeline, UTransformerSkipConnectionsCrossToTheMirroredStage) {
  const Graph graph = BuildZooModel("u_transformer", 8).value();
  // 40 MB/s and 8 us between the hosts: the cross-stage traffic takes about as long as the stages' compute.
  const Topology machine = testing::TwoHosts(2, 16e7, 2e-6);
  PipelinePlan plan = UTransformerStages(1, "");
  SimOptions options;
  options.keep_timeline = true;
  std::vector<double> step;
  std::vector<int64_t> kept;
  for (PipelineSchedule schedule :
       {PipelineSchedule::kGPipe, PipelineSchedule::kOneFOneB, PipelineSchedule::kEagerOneFOneB}) {
    plan.schedule = schedule;
    const Expected<PipelineResult> result = SimulatePipeline(graph, machine, plan, MakeAnalyticCostModel(), options);
    ASSERT_TRUE(result.ok()) << result.error().message;
    const PipelineResult& r = *result;
    int64_t skip = 0, back = 0;
    for (const PipelineTimelineTask& t : r.timeline) {
      if (t.kind == PipelineTaskKind::kActivation && t.stage == 0 && t.peer == 3) skip += t.bytes;
      if (t.kind == PipelineTaskKind::kGradient && t.stage == 3 && t.peer == 0) back += t.bytes;
    }
    // Three hops (pcie, ethernet, pcie) of the skips from encoder layers 0..5 (8 x 1024 x 1024 floats each) and
    // their gradients; the labels (8 x 1024 integers) go to the loss without a gradient.
    EXPECT_EQ(back, 3 * 6 * int64_t{8 * 1024 * 1024 * 4});
    EXPECT_EQ(skip, back + 3 * 8 * 1024 * 4);
    step.push_back(r.sim.step_time);
    kept.push_back(r.stages[0].activation_peak_bytes);
  }
  EXPECT_LT(step[2], step[1]);  // eager-1F1B hides what 1F1B waits for
  EXPECT_LT(step[1], step[0]);  // GPipe is slower still here (its transfers come in bursts on the slow link)
  EXPECT_GT(kept[0], kept[2]);  // at the price of activations between 1F1B's and GPipe's
  EXPECT_GT(kept[2], kept[1]);
}

// The U-Transformer in four stages of two devices over two hosts (configs/pipelines/u_transformer-2x4 on a test
// machine), every stage holding its activations replicated ("R,R"): eager-1F1B with broadcast resharding beats 1F1B
// with send/recv, and stays above the signal-only bound (cross-stage slices of 1 byte).
TEST(Pipeline, UTransformerEagerBroadcastBeatsOneFOneBSendRecvBelowTheSignalOnlyBound) {
  const Graph graph = BuildZooModel("u_transformer", 16).value();
  const Topology machine = testing::TwoHosts(4, 4e8, 2e-6);  // 100 MB/s between the hosts
  PipelinePlan plan = UTransformerStages(2, "R,R");
  auto step = [&](PipelineSchedule schedule, ReshardMethod method, ReshardBalance balance, bool signal_only) {
    plan.schedule = schedule;
    plan.reshard = {method, balance, 32, signal_only};
    const Expected<PipelineResult> r = SimulatePipeline(graph, machine, plan, MakeAnalyticCostModel());
    EXPECT_TRUE(r.ok()) << r.error().message;
    return r.ok() ? r->sim.step_time : 0.0;
  };
  const double baseline = step(PipelineSchedule::kOneFOneB, ReshardMethod::kSendRecv, ReshardBalance::kNaive, false);
  const double ours = step(PipelineSchedule::kEagerOneFOneB, ReshardMethod::kBroadcast, ReshardBalance::kOurs, false);
  const double bound = step(PipelineSchedule::kEagerOneFOneB, ReshardMethod::kBroadcast, ReshardBalance::kOurs, true);
  EXPECT_LT(ours, baseline / 1.1) << baseline << " " << ours << " " << bound;
  EXPECT_LT(bound, ours);
  EXPECT_LT(step(PipelineSchedule::kOneFOneB, ReshardMethod::kBroadcast, ReshardBalance::kOurs, false), baseline);
}

}  // namespace
}  // namespace devplace
