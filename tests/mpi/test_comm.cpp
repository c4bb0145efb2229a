// The Comm seam under mpiexec: every operation of the MPI backend on the cpu backend, in float
// and double, against exactly known answers; the log's byte and call accounting; communicators
// on sub-groups; and, where a GPU (and NCCL) is present, the same checks on device memory.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "src/comm/comm_log.h"
#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "tests/mpi/collective_checks.h"
#include "tests/mpi/gpu_ranks.h"
#include "tests/mpi/mpi_test.h"

namespace mlps {
namespace {

using testing::kCounts;
using testing::MpiTest;
using testing::world_rank;
using testing::world_size;

// ---- CommLog and helpers (no communication)

TEST(CommLogTest, KindNamesAreTheResultFileNames) {
  EXPECT_STREQ(to_string(CommKind::all_reduce), "allreduce");
  EXPECT_STREQ(to_string(CommKind::all_gather), "allgather");
  EXPECT_STREQ(to_string(CommKind::reduce_scatter), "reduce_scatter");
  EXPECT_STREQ(to_string(CommKind::broadcast), "broadcast");
  EXPECT_STREQ(to_string(CommKind::send_recv), "sendrecv");
}

TEST(CommLogTest, BusBandwidthFactorsAreNcclTests) {
  for (const int n : {1, 2, 3, 4, 8}) {
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CommKind::all_reduce, n), 2.0 * (n - 1) / n) << n;
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CommKind::all_gather, n), (n - 1.0) / n) << n;
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CommKind::reduce_scatter, n), (n - 1.0) / n) << n;
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CommKind::broadcast, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CommKind::send_recv, n), 1.0) << n;
  }
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CommKind::all_reduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(bus_bandwidth_factor(CommKind::all_gather, 4), 0.75);
}

TEST(CommLogTest, RecordsSumPerKindAndTakingClears) {
  CommLog log;
  log.record(CommKind::all_reduce, "world", 4, 100, 0.5);
  log.record(CommKind::all_reduce, "", 4, 28, 0.25);
  log.record(CommKind::send_recv, "world", 4, 8, 1.0);
  log.add_blocked(0.125);
  log.add_blocked(0.25);
  const auto totals = log.take_totals();
  ASSERT_EQ(totals.size(), 2u);
  EXPECT_EQ(totals.at("allreduce").bytes, 128);
  EXPECT_EQ(totals.at("allreduce").seconds, 0.75);
  EXPECT_EQ(totals.at("allreduce").calls, 2);
  EXPECT_EQ(totals.at("sendrecv").calls, 1);
  EXPECT_EQ(log.take_blocked_seconds(), 0.375);
  EXPECT_TRUE(log.take_totals().empty());
  EXPECT_EQ(log.take_blocked_seconds(), 0.0);
}

TEST(CommTypesTest, SizeOfDataTypes) {
  EXPECT_EQ(size_of(DataType::f32), 4u);
  EXPECT_EQ(size_of(DataType::f64), 8u);
  EXPECT_EQ(data_type_of<float>(), DataType::f32);
  EXPECT_EQ(data_type_of<double>(), DataType::f64);
}

// ---- MPI backend on the cpu backend, over the world

template <typename T>
class MpiCpuCommTest : public testing::TypedMpiTest<T> {
 protected:
  Device device{DeviceKind::cpu};
  std::shared_ptr<CommLog> log = std::make_shared<CommLog>();
  std::unique_ptr<Communicator> comm =
      make_communicator(CommBackend::mpi, device, MPI_COMM_WORLD, "world", log);

  // One of collective_checks.h's checks at every count.
  void at_every_count(void (*check)(Device&, Communicator&, int64_t)) {
    for (const int64_t count : kCounts) check(device, *comm, count);
  }
};
using ValueTypes = ::testing::Types<float, double>;
TYPED_TEST_SUITE(MpiCpuCommTest, ValueTypes);

TYPED_TEST(MpiCpuCommTest, DescribesItsGroup) {
  EXPECT_STREQ(this->comm->backend(), "mpi");
  EXPECT_EQ(this->comm->name(), "world");
  EXPECT_EQ(this->comm->rank(), world_rank());
  EXPECT_EQ(this->comm->size(), world_size());
  EXPECT_EQ(&this->comm->log(), this->log.get());
}

TYPED_TEST(MpiCpuCommTest, AllReduceSumsExactly) {
  this->at_every_count(&testing::check_all_reduce<TypeParam>);
}

TYPED_TEST(MpiCpuCommTest, AllGatherConcatenatesInRankOrder) {
  this->at_every_count(&testing::check_all_gather<TypeParam>);
}

TYPED_TEST(MpiCpuCommTest, ReduceScatterGivesEachRankItsSummedSlice) {
  this->at_every_count(&testing::check_reduce_scatter<TypeParam>);
}

TYPED_TEST(MpiCpuCommTest, BroadcastFromEveryRoot) {
  this->at_every_count(&testing::check_broadcast<TypeParam>);
}

TYPED_TEST(MpiCpuCommTest, RingExchangeDeliversInOrder) {
  this->at_every_count(&testing::check_ring_exchange<TypeParam>);
}

TYPED_TEST(MpiCpuCommTest, OutstandingOperationsWaitedOutOfOrder) {
  this->at_every_count(&testing::check_outstanding_out_of_order<TypeParam>);
}

TYPED_TEST(MpiCpuCommTest, DroppedRequestCompletes) {
  testing::check_dropped_request_completes<TypeParam>(this->device, *this->comm, 4097);
}

TYPED_TEST(MpiCpuCommTest, LogCountsNcclTestsBytes) {
  for (const int64_t count : {int64_t{1}, int64_t{12345}})
    testing::check_log_accounting<TypeParam>(this->device, *this->comm, *this->log, count);
}

// MPICH does part of a collective's work inside the call that starts it: the rank is then
// communicating, not computing, so starting a call is blocked time before any wait.
TYPED_TEST(MpiCpuCommTest, StartingACallIsBlockedTime) {
  const int64_t count = 1 << 16;
  Buffer<TypeParam> buffer(this->device, count);
  buffer.upload(testing::ramp<TypeParam>(world_rank(), count));
  (void)this->log->take_blocked_seconds();
  PendingComm pending = this->comm->all_reduce_async(buffer.data(), buffer.data(), count,
                                                     data_type_of<TypeParam>());
  const double started = this->log->take_blocked_seconds();
  EXPECT_GT(started, 0.0) << "the start of the call was not counted";
  pending->wait();
  const double waited = this->log->take_blocked_seconds();
  const double call = this->log->take_totals().at("allreduce").seconds;
  EXPECT_GE(waited, 0.0);
  EXPECT_LE(started + waited, call + 1e-9) << "blocked time exceeds start-to-completion time";
}

// A communicator that is destroyed with requests in flight completes them first.
TEST_F(MpiTest, CommunicatorDestroyedWithRequestsInFlight) {
  Device device(DeviceKind::cpu);
  auto log = std::make_shared<CommLog>();
  const int64_t count = 2000;
  Buffer<double> buffer(device, count);
  buffer.upload(testing::ramp<double>(world_rank(), count));
  PendingComm pending;
  {
    auto comm = make_communicator(CommBackend::mpi, device, MPI_COMM_WORLD, "world", log);
    pending = comm->all_reduce_async(buffer.data(), buffer.data(), count, DataType::f64);
  }
  EXPECT_EQ(testing::differences(buffer.download(),
                                 testing::summed_ramp<double>(world_size(), 0, count)),
            "");
  pending->wait();  // a no-op now
  EXPECT_EQ(log->take_totals().at("allreduce").calls, 1);
}

// ---- Sub-communicators: even and odd world ranks, sharing one log with the world's

TEST_F(MpiTest, SubCommunicatorsSpanTheirGroupOnly) {
  Device device(DeviceKind::cpu);
  auto log = std::make_shared<CommLog>();
  const int parity = world_rank() % 2;
  MPI_Comm split = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, parity, world_rank(), &split);
  auto group = make_communicator(CommBackend::mpi, device, split, "parity", log);
  MPI_Comm_free(&split);  // the communicator holds its own duplicate
  auto world = make_communicator(CommBackend::mpi, device, MPI_COMM_WORLD, "world", log);

  const int group_size = (world_size() + 1 - parity) / 2;
  EXPECT_EQ(group->name(), "parity");
  EXPECT_EQ(group->size(), group_size);
  EXPECT_EQ(group->rank(), world_rank() / 2);
  for (const int64_t count : {int64_t{3}, int64_t{5000}}) {
    testing::check_all_reduce<double>(device, *group, count);
    testing::check_all_gather<double>(device, *group, count);
    testing::check_reduce_scatter<double>(device, *group, count);
    testing::check_broadcast<double>(device, *group, count);
    testing::check_ring_exchange<double>(device, *group, count);
  }
  // Both communicators record into the shared log.
  (void)log->take_totals();
  std::vector<double> value = {1.0};
  group->all_reduce(value.data(), 1);
  EXPECT_EQ(value[0], group_size);
  world->all_reduce(value.data(), 1);
  // Every rank contributes its group's size: evens² + odds².
  const int evens = (world_size() + 1) / 2;
  const int odds = world_size() / 2;
  EXPECT_EQ(value[0], evens * evens + odds * odds);
  // Each is logged under its own name, with its own group size (for busbw).
  const auto totals = log->take_totals();
  ASSERT_EQ(totals.count("allreduce:parity"), 1u);
  ASSERT_EQ(totals.count("allreduce"), 1u);
  EXPECT_EQ(totals.at("allreduce:parity").calls, 1);
  EXPECT_EQ(totals.at("allreduce:parity").group_size, group_size);
  EXPECT_EQ(totals.at("allreduce").calls, 1);
  EXPECT_EQ(totals.at("allreduce").group_size, world_size());
}

// ---- Device memory: MPI staged through the host, and NCCL

class GpuCommTest : public testing::GpuRanksTest {};

TEST_F(GpuCommTest, MpiStagesDeviceBuffersThroughHost) {
  if (!bind_gpus()) GTEST_SKIP() << "no GPU on every rank: MPI on the cuda backend not checked";
  testing::GpuWorld world(CommBackend::mpi);
  testing::check_every_operation<float>(world.device, *world.comm, *world.log);
  testing::check_every_operation<double>(world.device, *world.comm, *world.log);
}

TEST_F(GpuCommTest, NcclMatchesExactAnswers) {
#ifndef MLPSCALE_WITH_NCCL
  GTEST_SKIP() << "built without NCCL: the NCCL backend not checked";
#else
  if (!bind_gpus()) GTEST_SKIP() << "no GPU on every rank: the NCCL backend not checked";
  if (!nccl_chosen())
    GTEST_SKIP() << "ranks share a GPU: the NCCL backend not checked (run one rank per GPU)";
  testing::GpuWorld world(CommBackend::nccl);
  EXPECT_STREQ(world.comm->backend(), "nccl");
  EXPECT_EQ(world.comm->rank(), world_rank());
  EXPECT_EQ(world.comm->size(), world_size());
  testing::check_every_operation<float>(world.device, *world.comm, *world.log);
  testing::check_every_operation<double>(world.device, *world.comm, *world.log);
#endif
}

#ifdef MLPSCALE_CUDA_EMULATE
// A failed ncclGetUniqueId on rank 0 must stop every rank with an error, not leave the others
// waiting for the id (the NCCL stand-in fails on request; real NCCL cannot be made to).
TEST_F(GpuCommTest, FailedUniqueIdOnRankZeroStopsEveryRank) {
  ASSERT_TRUE(bind_gpus());
  Device device(DeviceKind::cuda);
  auto log = std::make_shared<CommLog>();
  if (world_rank() == 0) setenv("MLPS_NCCL_STANDIN_FAIL", "ncclGetUniqueId", 1);
  bool threw = false;
  try {
    auto comm = make_communicator(CommBackend::nccl, device, MPI_COMM_WORLD, "world", log);
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()).find("ncclGetUniqueId") != std::string::npos;
  }
  unsetenv("MLPS_NCCL_STANDIN_FAIL");
  EXPECT_TRUE(threw) << "rank " << world_rank() << " went on without a unique id";
}
#endif

}  // namespace
}  // namespace mlps
