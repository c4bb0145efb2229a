// bin/plan's pieces: the link model, the candidates (each one a grid its scheme accepts), the
// pipeline's analytic volumes, and the step model's arithmetic (machine description files:
// test_plan_machine_file.cpp).
#include <gtest/gtest.h>

#include "src/schemes/data/data_grid.h"
#include "src/schemes/tensor1d/tensor1d_grid.h"
#include "src/schemes/serial/serial_memory.h"
#include "src/plan/plan_candidates.h"
#include "src/plan/step_prediction.h"
#include "src/schemes/pipeline/pipeline_volumes.h"
#include "tests/plan_test_inputs.h"

namespace mlps {
namespace {

TEST(PlanLink, AlphaBetaPerRingStepAndBusBytes) {
  const LinkModel link{1e-6, 1e9};
  // All-reduce over 4: 2·3 steps, 2·3/4 of the bytes on the bus.
  EXPECT_DOUBLE_EQ(link.seconds(CommKind::all_reduce, 4, 1e6), 6e-6 + 1.5e-3);
  EXPECT_DOUBLE_EQ(link.seconds(CommKind::all_gather, 4, 1e6), 3e-6 + 0.75e-3);
  EXPECT_DOUBLE_EQ(link.seconds(CommKind::send_recv, 2, 1e6), 1e-6 + 1e-3);
  EXPECT_EQ(link.seconds(CommKind::all_reduce, 1, 1e6), 0);
}

TEST(PlanMachine, RatesAreSharedByTheCoresARanksThreadsUse) {
  MachineDescription cpu = test_machine(2);  // a node of 2 cores
  cpu.ranks_share_node = true;
  EXPECT_DOUBLE_EQ(cpu.rate_share(1), 1.0);      // one rank on every core
  EXPECT_DOUBLE_EQ(cpu.rate_share(2), 0.5);      // the cores split among the ranks
  EXPECT_DOUBLE_EQ(cpu.rate_share(1, 1), 0.5);   // one rank on one thread uses one core
  EXPECT_DOUBLE_EQ(cpu.rate_share(2, 1), 0.5);
  EXPECT_DOUBLE_EQ(cpu.rate_share(4, 1), 0.25);  // 4 ranks time-share 2 cores
  EXPECT_DOUBLE_EQ(cpu.rate_share(1, 8), 1.0);   // threads beyond the cores add nothing
  EXPECT_DOUBLE_EQ(test_machine(8).rate_share(8, 1), 1.0);  // a GPU is a rank's own
}

TEST(PlanCandidates, EveryCandidateIsAGridItsSchemeAccepts) {
  const Options o = small_options();
  const auto all = enumerate_candidates(o, 4, {Precision::fp32});
  for (const char* label : {"data --zero 3 --precision fp32",
                            "pipeline --pp 2 --micro-batches 8 --schedule zb-v --precision fp32",
                            "pipeline --pp 2 --micro-batches 4 --schedule interleaved "
                            "--virtual-stages 2 --checkpoint-activations --precision fp32",
                            "tensor1d --tp 4 --precision fp32",
                            "tensor2d --tp-dims 2,2 --precision fp32",
                            "tensor3d --tp-dims 2,1,2 --precision fp32"})
    EXPECT_NE(find(all, label), nullptr) << label;
  EXPECT_EQ(find(all, "serial --precision fp32"), nullptr);  // one rank only
  // 4 blocks cannot make P·v = 8 virtual stages, nor ZB-V's 2P.
  EXPECT_EQ(find(all, "pipeline --pp 4 --micro-batches 4 --schedule interleaved "
                      "--virtual-stages 2 --precision fp32"), nullptr);
  EXPECT_EQ(find(all, "pipeline --pp 4 --micro-batches 8 --schedule zb-v --precision fp32"),
            nullptr);
  for (const PlanCandidate& c : all) {
    EXPECT_EQ(c.world, 4);
    EXPECT_EQ(c.tensor_ranks() * c.replicas * c.pipeline_stages(), 4) << c.label();
  }
  // --fp32-grad-comm belongs to the 16-bit runs only (fp64 gradients travel in fp64).
  Options grad32 = small_options();
  grad32.fp32_grad_comm = true;
  const auto mixed = enumerate_candidates(grad32, 2, {Precision::fp64, Precision::bf16});
  EXPECT_NE(find(mixed, "data --zero 0 --precision bf16 --fp32-grad-comm"), nullptr);
  const PlanCandidate* fp64 = find(mixed, "data --zero 0 --precision fp64");
  ASSERT_NE(fp64, nullptr);
  EXPECT_EQ(predict_step(*fp64, test_machine(8)).collectives.at("allreduce").bytes,
            8.0 * static_cast<double>(parameter_count(grad32.model)));
  // H 64 does not split over 3 ranks: tensor1d and tensor3d offer nothing for 3.
  for (const PlanCandidate& c : enumerate_candidates(o, 3, {Precision::fp32}))
    EXPECT_TRUE(c.scheme == "data" || c.scheme == "pipeline") << c.label();
}

TEST(PlanCandidates, TensorParallelismIsWeighedWithAndWithoutSequenceParallelism) {
  Options o = small_options();  // batch 32
  const auto all = enumerate_candidates(o, 4, {Precision::fp32});
  const PlanCandidate* sp = find(all, "tensor1d --tp 2 --sequence-parallel --precision fp32");
  ASSERT_NE(sp, nullptr);
  EXPECT_TRUE(sp->grid_as<Tensor1dGrid>().sequence_parallel);
  EXPECT_NE(find(all, "tensor1d --tp 4 --sequence-parallel --precision fp32"), nullptr);
  // Each replica's 3 rows do not split over T = 2 ranks: only plain tensor parallelism.
  o.batch = 6;
  const auto odd = enumerate_candidates(o, 4, {Precision::fp32});
  EXPECT_NE(find(odd, "tensor1d --tp 2 --precision fp32"), nullptr);
  EXPECT_EQ(find(odd, "tensor1d --tp 2 --sequence-parallel --precision fp32"), nullptr);
}

// 8 blocks of H 24 on 5×5 images, for the pipeline volume tests.
ModelConfig eight_blocks() {
  ModelConfig model;
  model.hidden = 24;
  model.layers = 8;
  model.image_size = 5;
  return model;
}

PipelineOptions interleaved_options(int pp) {
  PipelineOptions po;
  po.pp = pp;
  po.micro_batches = 4;
  po.schedule = "interleaved";
  po.virtual_stages = 2;
  return po;
}

TEST(PipelineVolumes, BoundariesToOtherRanksCountedOnBothEnds) {
  const ModelConfig model = eight_blocks();
  PipelineOptions po = interleaved_options(4);
  const PipelineGrid interleaved = resolve_pipeline_grid(po, model, 24, 4);
  const double boundary = 2.0 * 24 * 24 * 8;  // rows × H × fp64, forward and back
  // Rank 0 holds virtual stages 0 and 4: boundaries 0-1, 3-4 and 4-5; rank 1 holds 1 and 5.
  EXPECT_EQ(pipeline_comm_bytes(model, interleaved, 24, 0, 8, 8).at("sendrecv:pipe"), 3 * boundary);
  EXPECT_EQ(pipeline_comm_bytes(model, interleaved, 24, 1, 8, 8).at("sendrecv:pipe"), 4 * boundary);
  po.schedule = "zb-v";
  po.virtual_stages = 1;
  const PipelineGrid v = resolve_pipeline_grid(po, model, 24, 4);
  // The V: rank 0 holds the ends (0 and 7), rank 1 stages 1 and 6, rank 3 the turn (3 and 4,
  // whose boundary is local).
  EXPECT_EQ(pipeline_comm_bytes(model, v, 24, 0, 8, 8).at("sendrecv:pipe"), 2 * boundary);
  EXPECT_EQ(pipeline_comm_bytes(model, v, 24, 1, 8, 8).at("sendrecv:pipe"), 4 * boundary);
  EXPECT_EQ(pipeline_comm_bytes(model, v, 24, 3, 8, 8).at("sendrecv:pipe"), 2 * boundary);
  // Two replicas: each rank all-reduces its chunks' gradients once.
  po.schedule = "1f1b";
  po.pp = 2;
  const PipelineGrid replicated = resolve_pipeline_grid(po, model, 24, 4);
  const auto bytes = pipeline_comm_bytes(model, replicated, 24, 3, 2, 4);
  EXPECT_EQ(bytes.at("allreduce:data"),
            4.0 * static_cast<double>(pipeline_rank_parameters(model, replicated, 1)));
  EXPECT_EQ(pipeline_rank_parameters(model, replicated, 0) +
                pipeline_rank_parameters(model, replicated, 1),
            parameter_count(model));
}

TEST(PipelineVolumes, CallsAreAMessagePerMicroBatchAndBoundaryEachWayAndAnAllReducePerChunk) {
  const ModelConfig model = eight_blocks();
  const PipelineOptions po = interleaved_options(2);
  // 2 stages × 2 chunks × 2 replicas: rank 0 holds virtual stages 0 and 2 (3 boundaries).
  const PipelineGrid layout = resolve_pipeline_grid(po, model, 24, 4);
  CommCalls calls, forward;
  pipeline_comm_bytes(model, layout, 24, 0, 8, 8, false, &calls);
  EXPECT_EQ(calls, (CommCalls{{"sendrecv:pipe", 3 * 2 * 4}, {"allreduce:data", 2}}));
  pipeline_comm_bytes(model, layout, 24, 0, 8, 8, true, &forward);
  EXPECT_EQ(forward, (CommCalls{{"sendrecv:pipe", 3 * 4}}));
}

TEST(PlanStep, SerialIsFlopsAtTheRateAndBytesAtTheBandwidth) {
  Options o = small_options();
  const auto all = enumerate_candidates(o, 1, {Precision::fp32});
  const PlanCandidate* serial = find(all, "serial --precision fp32");
  ASSERT_NE(serial, nullptr);
  const MachineDescription m = test_machine(8);
  const StepPrediction p = predict_step(*serial, m);
  const double params = static_cast<double>(parameter_count(o.model));
  EXPECT_DOUBLE_EQ(p.compute, 6 * params * 32 / m.gemm_fp32_flops);
  const StepElementwiseBytes e = training_step_elementwise_bytes(o.model, 32, 4);
  EXPECT_DOUBLE_EQ(p.elementwise, (e.forward + e.backward) / m.memory_bandwidth);
  EXPECT_DOUBLE_EQ(p.optimizer, 7 * params * 4 / m.optimizer_bandwidth);  // Adam: 7 accesses
  // Each weight read by forward and by the input gradient, its gradient read and written.
  EXPECT_DOUBLE_EQ(p.weights_from_memory, 4 * (params * 4 / m.memory_bandwidth));
  EXPECT_EQ(p.comm, 0);
  EXPECT_DOUBLE_EQ(p.step, p.compute + p.weights_from_memory + p.elementwise + p.optimizer);
  EXPECT_EQ(p.memory.total(), serial_memory(serial->options, false).total());
}

TEST(PlanStep, PipelineBubbleIsTheSchedulesFormula) {
  const auto all = enumerate_candidates(small_options(), 4, {Precision::fp32});
  const PlanCandidate* c =
      find(all, "pipeline --pp 4 --micro-batches 8 --schedule 1f1b --precision fp32");
  ASSERT_NE(c, nullptr);
  const StepPrediction p = predict_step(*c, test_machine(8));
  EXPECT_DOUBLE_EQ(p.bubble_fraction, 3.0 / 11.0);  // (P − 1)/(M + P − 1)
  EXPECT_GT(p.bubble, 0);
  ASSERT_EQ(p.collectives.count("sendrecv:pipe"), 1u);
  EXPECT_EQ(p.collectives.at("sendrecv:pipe").group_size, 4);
  EXPECT_LT(p.exposed_comm, p.comm);  // only the fill and the drain wait for transfers
  MachineDescription busy = test_machine(8);
  busy.comm_overlaps_compute = false;  // nothing hides, and the bubble stays
  const StepPrediction q = predict_step(*c, busy);
  EXPECT_DOUBLE_EQ(q.exposed_comm, q.comm);
  EXPECT_DOUBLE_EQ(q.bubble_fraction, p.bubble_fraction);
  EXPECT_GT(q.bubble, 0);
}

TEST(PlanStep, GroupsAcrossNodesUseTheNetworkAtOneNicPerRank) {
  const Options o = small_options();
  const MachineDescription m = test_machine(8);
  const auto on_one_node = enumerate_candidates(o, 8, {Precision::fp32});
  const auto on_two = enumerate_candidates(o, 16, {Precision::fp32});
  const StepPrediction one = predict_step(*find(on_one_node, "data --zero 0 --precision fp32"), m);
  const StepPrediction two = predict_step(*find(on_two, "data --zero 0 --precision fp32"), m);
  EXPECT_FALSE(one.collectives.at("allreduce").inter_node);
  EXPECT_TRUE(two.collectives.at("allreduce").inter_node);
  // tp 8 × dp 2: the tensor groups stay on a node, the data groups (one rank a node) cross.
  const StepPrediction t = predict_step(*find(on_two, "tensor1d --tp 8 --precision fp32"), m);
  EXPECT_FALSE(t.collectives.at("allreduce:tp").inter_node);
  EXPECT_TRUE(t.collectives.at("allreduce:data").inter_node);
  // 8 ranks a node cross on 8 NICs: 8 × 1e10 B/s, under the 1e11 within a node.
  const PredictedComm& c = two.collectives.at("allreduce");
  const double per_call = c.bytes / c.calls;
  EXPECT_NEAR(c.seconds, c.calls * (30 * 5e-6 + per_call * 2 * 15.0 / 16 / 8e10), 1e-12);
}

TEST(PlanStep, DataParallelHidesReductionsBehindBackwardButNotZeroGathers) {
  const auto all = enumerate_candidates(small_options(), 4, {Precision::fp32});
  MachineDescription m = test_machine(8);
  m.intra_node.bus_bandwidth = 1e6;  // slow enough that nothing hides completely
  PlanCandidate small_buckets = *find(all, "data --zero 0 --precision fp32");
  small_buckets.grid_as<DataGrid>().bucket_mb = 0.01;  // many buckets: all but the last can hide
  const StepPrediction ddp = predict_step(small_buckets, m);
  ASSERT_GT(ddp.collectives.at("allreduce").calls, 2);
  const StepPrediction zero1 = predict_step(*find(all, "data --zero 1 --precision fp32"), m);
  EXPECT_LT(ddp.exposed_comm, ddp.comm);
  EXPECT_GE(ddp.exposed_comm, ddp.comm / ddp.collectives.at("allreduce").calls);
  // ZeRO-1 gathers the updated shards after the optimizer: all of it waits.
  EXPECT_GE(zero1.exposed_comm, zero1.collectives.at("allgather").seconds);
  EXPECT_LT(zero1.optimizer, ddp.optimizer);  // a quarter of the parameters each
  m.comm_overlaps_compute = false;  // MPI on busy CPU cores: nothing hides
  const StepPrediction cpu = predict_step(small_buckets, m);
  EXPECT_DOUBLE_EQ(cpu.exposed_comm, cpu.comm);
}

TEST(PlanStep, AModelTooLargeForTheMachineDoesNotFit) {
  Options o = small_options();
  o.model.hidden = 4096;
  MachineDescription m = test_machine(8);
  m.memory_bytes = 1e9;
  const auto all = enumerate_candidates(o, 2, {Precision::fp32});
  const StepPrediction ddp = predict_step(*find(all, "data --zero 0 --precision fp32"), m);
  const StepPrediction zero3 = predict_step(*find(all, "data --zero 3 --precision fp32"), m);
  EXPECT_FALSE(ddp.fits());
  EXPECT_LT(zero3.memory.total(), ddp.memory.total());
}

}  // namespace
}  // namespace mlps
