// The 16-bit wire of the communicators under mpiexec: every operation with bf16 and fp16 wires
// on f32 payloads, against answers known exactly. Two kinds of input: values whose partial sums
// are all exactly representable in the format (the answer is the plain sum, in any reduction
// order), and values that must be rounded, where only ranks 0 and 1 contribute to a reduction
// (the others add zeros) so that there is exactly one rounded addition, in any order; the
// expected answers come from the formats' definitions (tests/storage_rounding_reference.h),
// not from the kernels. Also: 2 bytes per element in the log, f64 untouched, the full wire
// unchanged, and the format of operations in flight.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "src/device/buffer.h"
#include "src/comm/comm_log.h"
#include "src/comm/make_communicator.h"
#include "src/comm/process_placement.h"
#include "tests/half_values.h"
#include "tests/mpi/collective_checks.h"
#include "tests/mpi/gpu_ranks.h"
#include "tests/mpi/mpi_test.h"
#include "tests/storage_rounding_reference.h"

namespace mlps {
namespace {

using testing::differences;
using testing::kCounts;

// Integers up to 36 times 1, 2^-20 (fp16 subnormals) or 4, either sign: every partial sum over
// at most four ranks is an integer below 256 times the same power of two, exact in bf16 and fp16.
double exact_value(int rank, int64_t i) {
  const double scales[] = {1.0, 0x1p-20, 4.0};
  const double magnitude = static_cast<double>(rank + 1 + i % 32) * scales[i % 3];
  return i % 2 ? -magnitude : magnitude;
}

// Values with more bits than either format holds, a few negative, over several binades.
double inexact_value(int rank, int64_t i) {
  const double magnitude =
      (1.0 + 0.37 * static_cast<double>(i % 41) + 0.11 * rank) * std::ldexp(1.0, int(i % 7) - 3);
  return i % 5 == 0 ? -magnitude : magnitude;
}

template <typename F>
std::vector<float> values(int64_t count, F value_at) {
  std::vector<float> v(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = static_cast<float>(value_at(i));
  return v;
}

// A reduction input of the rounding case: ranks 0 and 1 send inexact values, the others zeros.
double contributed(int rank, int64_t i) { return rank < 2 ? inexact_value(rank, i) : 0.0; }

// The reduced value of the rounding case: each input rounded on the wire, then their sum rounded.
float rounded_sum(int ranks, int64_t i, StorageFormat format) {
  double sum = 0.0;
  for (int r = 0; r < std::min(ranks, 2); ++r)
    sum += ref::round_to(static_cast<float>(contributed(r, i)), format);
  return ref::round_to(sum, format);
}

std::string name_of(StorageFormat format) {
  return format == StorageFormat::bf16 ? "bf16" : "fp16";
}

// The checks, for any device (host memory on cpu, staged through the host on cuda) and backend.
class WireChecks {
 public:
  WireChecks(Device& device, Communicator& comm, StorageFormat format)
      : device_(device), comm_(comm), format_(format), n_(comm.size()), r_(comm.rank()) {
    comm_.set_wire_format(format);
  }

  void all_reduce(int64_t count) {
    // Exact partial sums: the plain sum, out of place and in place.
    Buffer<float> send(device_, count), recv(device_, count);
    send.upload(values(count, [&](int64_t i) { return exact_value(r_, i); }));
    comm_.all_reduce_async(send.data(), recv.data(), count, DataType::f32)->wait();
    const auto exact_sum = values(count, [&](int64_t i) {
      double s = 0;
      for (int q = 0; q < n_; ++q) s += exact_value(q, i);
      return s;
    });
    EXPECT_EQ(differences(recv.download(), exact_sum), "") << "exact, count " << count;
    comm_.all_reduce(send.data(), count);
    EXPECT_EQ(differences(send.download(), exact_sum), "") << "exact in place, count " << count;
    // Rounding: on the wire and in the sum.
    send.upload(values(count, [&](int64_t i) { return contributed(r_, i); }));
    comm_.all_reduce(send.data(), count);
    const auto want = values(count, [&](int64_t i) { return rounded_sum(n_, i, format_); });
    EXPECT_EQ(differences(send.download(), want), "") << "rounded, count " << count;
  }

  void all_gather(int64_t count) {
    Buffer<float> send(device_, count), recv(device_, n_ * count);
    send.upload(values(count, [&](int64_t i) { return inexact_value(r_, i); }));
    comm_.all_gather_async(send.data(), recv.data(), count, DataType::f32)->wait();
    // Every part rounded, this rank's own too, so that all ranks hold the same values.
    const auto want = values(n_ * count, [&](int64_t j) {
      return ref::round_to(static_cast<float>(inexact_value(int(j / count), j % count)), format_);
    });
    EXPECT_EQ(differences(recv.download(), want), "") << "count " << count;
    // In place: this rank's part already at its slot.
    std::vector<float> host(static_cast<size_t>(n_ * count), -7.0f);
    const auto mine = values(count, [&](int64_t i) { return inexact_value(r_, i); });
    std::copy(mine.begin(), mine.end(), host.begin() + r_ * count);
    recv.upload(host);
    comm_.all_gather_async(recv.data() + r_ * count, recv.data(), count, DataType::f32)->wait();
    EXPECT_EQ(differences(recv.download(), want), "") << "in place, count " << count;
  }

  void reduce_scatter(int64_t count) {
    Buffer<float> send(device_, n_ * count), recv(device_, count);
    send.upload(values(n_ * count, [&](int64_t j) { return exact_value(r_, j); }));
    comm_.reduce_scatter_async(send.data(), recv.data(), count, DataType::f32)->wait();
    const auto exact_slot = values(count, [&](int64_t i) {
      double s = 0;
      for (int q = 0; q < n_; ++q) s += exact_value(q, r_ * count + i);
      return s;
    });
    EXPECT_EQ(differences(recv.download(), exact_slot), "") << "exact, count " << count;
    send.upload(values(n_ * count, [&](int64_t j) { return contributed(r_, j); }));
    const auto want =
        values(count, [&](int64_t i) { return rounded_sum(n_, r_ * count + i, format_); });
    comm_.reduce_scatter(send.data(), recv.data(), count);
    EXPECT_EQ(differences(recv.download(), want), "") << "rounded, count " << count;
    // In place as NCCL defines it: the result lands in this rank's slot of the input.
    comm_.reduce_scatter_async(send.data(), send.data() + r_ * count, count, DataType::f32)
        ->wait();
    EXPECT_EQ(differences(testing::slice(send.download(), r_ * count, count), want), "")
        << "rounded in place, count " << count;
  }

  void broadcast(int64_t count) {
    Buffer<float> buffer(device_, count);
    for (int root = 0; root < n_; ++root) {
      buffer.zero();
      if (r_ == root)
        buffer.upload(values(count, [&](int64_t i) { return inexact_value(root, i); }));
      comm_.broadcast_async(buffer.data(), count, DataType::f32, root)->wait();
      // The root's own buffer is rounded too.
      const auto want = values(count, [&](int64_t i) {
        return ref::round_to(static_cast<float>(inexact_value(root, i)), format_);
      });
      EXPECT_EQ(differences(buffer.download(), want), "") << "root " << root << ", count " << count;
    }
  }

  void ring_exchange(int64_t count) {
    const int next = (r_ + 1) % n_, prev = (r_ + n_ - 1) % n_;
    Buffer<float> out(device_, count), in(device_, count);
    const auto mine = values(count, [&](int64_t i) { return inexact_value(r_, i); });
    out.upload(mine);
    PendingComm send = comm_.send_async(out.data(), count, DataType::f32, next);
    PendingComm recv = comm_.recv_async(in.data(), count, DataType::f32, prev);
    recv->wait();
    send->wait();
    const auto want = values(count, [&](int64_t i) {
      return ref::round_to(static_cast<float>(inexact_value(prev, i)), format_);
    });
    EXPECT_EQ(differences(in.download(), want), "") << "count " << count;
    EXPECT_EQ(differences(out.download(), mine), "") << "the sender's buffer changed";
  }

 private:
  Device& device_;
  Communicator& comm_;
  StorageFormat format_;
  int n_;
  int r_;
};

class WireFormatTest : public testing::MpiTest,
                       public ::testing::WithParamInterface<StorageFormat> {
 protected:
  Device device{DeviceKind::cpu};
  std::shared_ptr<CommLog> log = std::make_shared<CommLog>();
  std::unique_ptr<Communicator> comm =
      make_communicator(CommBackend::mpi, device, MPI_COMM_WORLD, "world", log);

  // One of WireChecks' checks at every count, on this test's wire format.
  void at_every_count(void (WireChecks::*check)(int64_t)) {
    WireChecks checks(device, *comm, GetParam());
    for (const int64_t count : kCounts) (checks.*check)(count);
  }
};
INSTANTIATE_TEST_SUITE_P(Formats, WireFormatTest,
                         ::testing::Values(StorageFormat::bf16, StorageFormat::fp16),
                         [](const auto& info) { return name_of(info.param); });

// The test inputs do what the tests claim: the rounding cases really round, on the wire and in
// the sum (otherwise the checks below could pass on a wire that sends floats).
TEST_P(WireFormatTest, InputsNeedRounding) {
  int wire_rounded = 0, sum_rounded = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    const float a = static_cast<float>(inexact_value(0, i));
    const float b = static_cast<float>(inexact_value(1, i));
    const float ra = ref::round_to(a, GetParam()), rb = ref::round_to(b, GetParam());
    wire_rounded += ra != a ? 1 : 0;
    sum_rounded += ref::round_to(double(ra) + rb, GetParam()) != double(ra) + rb ? 1 : 0;
  }
  EXPECT_GT(wire_rounded, 900);
  EXPECT_GT(sum_rounded, 100);
}

TEST_P(WireFormatTest, DefaultIsFullAndSetSticks) {
  EXPECT_EQ(comm->wire_format(), StorageFormat::full);
  comm->set_wire_format(GetParam());
  EXPECT_EQ(comm->wire_format(), GetParam());
}

TEST_P(WireFormatTest, AllReduce) {
  at_every_count(&WireChecks::all_reduce);
}

TEST_P(WireFormatTest, AllGather) {
  at_every_count(&WireChecks::all_gather);
}

TEST_P(WireFormatTest, ReduceScatter) {
  at_every_count(&WireChecks::reduce_scatter);
}

TEST_P(WireFormatTest, Broadcast) {
  at_every_count(&WireChecks::broadcast);
}

TEST_P(WireFormatTest, SendRecv) {
  at_every_count(&WireChecks::ring_exchange);
}

// nccl-tests' sizes with 2 bytes per element; f64 payloads keep 8 and are not rounded.
TEST_P(WireFormatTest, LogRecordsTwoBytesPerElementAndF64IsUntouched) {
  comm->set_wire_format(GetParam());
  const int n = comm->size();
  const int64_t count = 333;
  (void)log->take_totals();
  Buffer<float> small(device, count), large(device, n * count), other(device, count);
  small.upload(values(count, [&](int64_t i) { return exact_value(comm->rank(), i); }));
  comm->all_reduce(small.data(), count);
  comm->all_gather(small.data(), large.data(), count);
  comm->reduce_scatter(large.data(), small.data(), count);
  comm->broadcast(small.data(), count, 0);
  PendingComm send = comm->send_async(small.data(), count, DataType::f32, (comm->rank() + 1) % n);
  PendingComm recv =
      comm->recv_async(other.data(), count, DataType::f32, (comm->rank() + n - 1) % n);
  recv->wait();
  send->wait();
  const double bytes = 2.0 * count;
  const std::map<std::string, double> expected = {{"allreduce", bytes},
                                                   {"allgather", bytes * n},
                                                   {"reduce_scatter", bytes * n},
                                                   {"broadcast", bytes},
                                                   {"sendrecv", 2 * bytes}};
  const auto totals = log->take_totals();
  EXPECT_EQ(totals.size(), expected.size());
  for (const auto& [kind, want] : expected) {
    const auto found = totals.find(kind);
    if (found == totals.end()) {
      ADD_FAILURE() << "no totals for " << kind;
      continue;
    }
    EXPECT_EQ(found->second.bytes, want) << kind;
  }

  // f64: 1 + 2^-30 survives every operation exactly, and is logged at 8 bytes per element.
  const double fine = 1.0 + 0x1p-30;
  std::vector<double> d(static_cast<size_t>(count), fine);
  comm->all_reduce(d.data(), count);
  EXPECT_EQ(d[0], fine * n);
  std::vector<double> gathered(static_cast<size_t>(n * count));
  std::vector<double> mine(static_cast<size_t>(count), fine);
  comm->all_gather(mine.data(), gathered.data(), count);
  EXPECT_EQ(differences(gathered, std::vector<double>(gathered.size(), fine)), "");
  comm->broadcast(mine.data(), count, 0);
  EXPECT_EQ(mine[0], fine);
  const auto f64 = log->take_totals();
  EXPECT_EQ(f64.at("allreduce").bytes, 8.0 * count);
  EXPECT_EQ(f64.at("allgather").bytes, 8.0 * count * n);
}

// Typed 16-bit payloads (DataType::bf16/fp16, typed storage's buffers) on the full wire: each
// operation gives the bits the 16-bit wire gives f32 payloads, and the log counts 2 bytes.
template <typename S>
void check_16bit_payloads(Communicator& comm, CommLog& log) {
  const StorageFormat format = format_of<S>();
  constexpr DataType type = data_type_of<S>();
  const int n = comm.size(), r = comm.rank();
  const int64_t count = 257;
  (void)log.take_totals();
  // Reductions round their one inexact sum as the wire does.
  auto reduced = test::typed<S>(values(count, [&](int64_t i) { return contributed(r, i); }));
  comm.all_reduce_async(reduced.data(), reduced.data(), count, type)->wait();
  EXPECT_EQ(differences(test::widened(reduced),
                        values(count, [&](int64_t i) { return rounded_sum(n, i, format); })),
            "");
  const auto whole =
      test::typed<S>(values(n * count, [&](int64_t j) { return contributed(r, j); }));
  std::vector<S> part(static_cast<size_t>(count));
  comm.reduce_scatter_async(whole.data(), part.data(), count, type)->wait();
  EXPECT_EQ(differences(test::widened(part), values(count, [&](int64_t i) {
                          return rounded_sum(n, r * count + i, format);
                        })),
            "");
  // Gathers and broadcasts move the 16-bit values as they are.
  const auto mine = test::typed<S>(values(count, [&](int64_t i) { return inexact_value(r, i); }));
  std::vector<S> all(static_cast<size_t>(n * count));
  comm.all_gather_async(mine.data(), all.data(), count, type)->wait();
  EXPECT_EQ(differences(test::widened(all), values(n * count, [&](int64_t j) {
                          return ref::round_to(
                              static_cast<float>(inexact_value(int(j / count), j % count)),
                              format);
                        })),
            "");
  auto root_values =
      test::typed<S>(values(count, [&](int64_t i) { return inexact_value(r, i); }));
  comm.broadcast_async(root_values.data(), count, type, 0)->wait();
  EXPECT_EQ(differences(test::widened(root_values), values(count, [&](int64_t i) {
                          return ref::round_to(static_cast<float>(inexact_value(0, i)), format);
                        })),
            "");
  const auto totals = log.take_totals();
  EXPECT_EQ(totals.at("allreduce").bytes, 2.0 * count);
  EXPECT_EQ(totals.at("reduce_scatter").bytes, 2.0 * count * n);
  EXPECT_EQ(totals.at("allgather").bytes, 2.0 * count * n);
  EXPECT_EQ(totals.at("broadcast").bytes, 2.0 * count);
}

TEST_P(WireFormatTest, SixteenBitPayloadsMatchTheWire) {
  if (GetParam() == StorageFormat::bf16)
    check_16bit_payloads<bf16>(*comm, *log);
  else
    check_16bit_payloads<fp16>(*comm, *log);
}

// Back on the full wire, floats travel exactly again, at 4 bytes per element.
TEST_P(WireFormatTest, FullWireSendsFloats) {
  comm->set_wire_format(GetParam());
  comm->set_wire_format(StorageFormat::full);
  const int64_t count = 100;
  const float fine = 1.0f + 0x1p-20f;
  std::vector<float> x(static_cast<size_t>(count), fine);
  (void)log->take_totals();
  comm->all_reduce(x.data(), count);
  EXPECT_EQ(x[0], fine * static_cast<float>(comm->size()));
  comm->broadcast(x.data(), count, 0);
  EXPECT_EQ(log->take_totals().at("allreduce").bytes, 4.0 * count);
}

// Operations in flight keep the format they were posted with, and complete out of order.
TEST_P(WireFormatTest, InFlightOperationsKeepTheirFormat) {
  const int n = comm->size(), r = comm->rank();
  const int64_t count = 501;
  comm->set_wire_format(GetParam());
  Buffer<float> reduce(device, count), gather_in(device, count), gather_out(device, n * count),
      bcast(device, count);
  reduce.upload(values(count, [&](int64_t i) { return contributed(r, i); }));
  gather_in.upload(values(count, [&](int64_t i) { return inexact_value(r, i); }));
  bcast.upload(values(count, [&](int64_t i) { return inexact_value(0, i); }));
  PendingComm p1 = comm->all_reduce_async(reduce.data(), reduce.data(), count, DataType::f32);
  PendingComm p2 =
      comm->all_gather_async(gather_in.data(), gather_out.data(), count, DataType::f32);
  PendingComm p3 = comm->broadcast_async(bcast.data(), count, DataType::f32, 0);
  comm->set_wire_format(StorageFormat::full);
  p3->wait();
  p1->wait();
  p2->wait();
  EXPECT_EQ(differences(reduce.download(),
                        values(count, [&](int64_t i) { return rounded_sum(n, i, GetParam()); })),
            "");
  EXPECT_EQ(differences(gather_out.download(), values(n * count, [&](int64_t j) {
                          return ref::round_to(
                              static_cast<float>(inexact_value(int(j / count), j % count)),
                              GetParam());
                        })),
            "");
  EXPECT_EQ(differences(bcast.download(), values(count, [&](int64_t i) {
                          return ref::round_to(static_cast<float>(inexact_value(0, i)), GetParam());
                        })),
            "");
}

// ---- Device memory: MPI staged through the host, and NCCL (skipped without a GPU per rank)

class GpuWireFormatTest : public testing::GpuRanksTest,
                          public ::testing::WithParamInterface<StorageFormat> {
 protected:
  void check_all(Communicator& comm, Device& device) {
    WireChecks checks(device, comm, GetParam());
    for (const int64_t count : {int64_t{7}, int64_t{40000}}) {
      checks.all_reduce(count);
      checks.all_gather(count);
      checks.reduce_scatter(count);
      checks.broadcast(count);
      checks.ring_exchange(count);
    }
  }
};
INSTANTIATE_TEST_SUITE_P(Formats, GpuWireFormatTest,
                         ::testing::Values(StorageFormat::bf16, StorageFormat::fp16),
                         [](const auto& info) { return name_of(info.param); });

TEST_P(GpuWireFormatTest, MpiPacksStagedDeviceBuffers) {
  if (!bind_gpus()) GTEST_SKIP() << "no GPU on every rank: MPI 16-bit wire on cuda not checked";
  testing::GpuWorld world(CommBackend::mpi);
  check_all(*world.comm, world.device);
}

TEST_P(GpuWireFormatTest, NcclPacksOnTheDevice) {
#ifndef MLPSCALE_WITH_NCCL
  GTEST_SKIP() << "built without NCCL: the NCCL 16-bit wire not checked";
#else
  if (!bind_gpus()) GTEST_SKIP() << "no GPU on every rank: the NCCL 16-bit wire not checked";
  if (!nccl_chosen())
    GTEST_SKIP() << "ranks share a GPU: the NCCL 16-bit wire not checked (one rank per GPU)";
  testing::GpuWorld world(CommBackend::nccl);
  check_all(*world.comm, world.device);
  // The bytes NCCL is asked to move: 2 per element.
  (void)world.log->take_totals();
  Buffer<float> x(world.device, 1000);
  x.zero();
  world.comm->all_reduce(x.data(), 1000);
  EXPECT_EQ(world.log->take_totals().at("allreduce").bytes, 2000.0);
#endif
}

}  // namespace
}  // namespace mlps
