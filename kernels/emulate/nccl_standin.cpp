// The NCCL stand-in of the emulated-GPU build, over MPI (see include/nccl.h for what it keeps
// of NCCL's semantics and what it does not). Buffers are host memory, as the emulated GPU's
// memory is. Each operation waits for its stream (its inputs were queued there), posts
// non-blocking MPI calls and completes them before returning: the work queued on the stream
// afterwards then sees the result. Calls between ncclGroupStart and ncclGroupEnd are posted
// together at ncclGroupEnd and completed with one MPI_Waitall.
//
// For tests, MLPS_NCCL_STANDIN_FAIL=<call name> makes that call fail with ncclSystemError in
// the processes that have it set (ncclGetUniqueId, ncclCommInitRank).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "kernels/aliasing.h"

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string last_error;
};

namespace {

// ---- unique ids and the rendezvous of ncclCommInitRank

constexpr char kIdMagic[] = "mlpscale nccl stand-in";
struct IdFields {
  char magic[sizeof(kIdMagic)];
  int root_world_rank;
  uint64_t nonce;  // tells apart the groups that one root initialises
};
static_assert(sizeof(IdFields) <= NCCL_UNIQUE_ID_BYTES);

// Tags on MPI_COMM_WORLD for the rendezvous; the project's own traffic runs on other
// communicators.
constexpr int kHelloTag = 0x4e43;
constexpr int kMembersTag = 0x4e44;
constexpr int kCreateTag = 0x4e45;
constexpr int kPointToPointTag = 0x4e46;

struct Hello {
  uint64_t nonce;
  int group_rank;
  int world_rank;
};
// A root may receive a member's hello for a group it has not reached yet: kept until it does.
std::vector<Hello> early_hellos;

bool injected_failure(const char* call) {
  const char* value = std::getenv("MLPS_NCCL_STANDIN_FAIL");
  return value && std::strcmp(value, call) == 0;
}

bool mpi_usable() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

// The root collects one hello from each other member, then tells every member the world ranks
// in group-rank order.
ncclResult_t gather_members(const IdFields& id, int nranks, std::vector<int>& members) {
  std::vector<bool> seen(static_cast<size_t>(nranks), false);
  seen[0] = true;
  int missing = nranks - 1;
  const auto take = [&](const Hello& hello) {
    if (hello.group_rank <= 0 || hello.group_rank >= nranks || seen[hello.group_rank])
      return false;
    seen[hello.group_rank] = true;
    members[hello.group_rank] = hello.world_rank;
    --missing;
    return true;
  };
  std::erase_if(early_hellos, [&](const Hello& h) { return h.nonce == id.nonce && take(h); });
  while (missing > 0) {
    Hello hello{};
    MPI_Recv(&hello, sizeof(hello), MPI_BYTE, MPI_ANY_SOURCE, kHelloTag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    if (hello.nonce != id.nonce) early_hellos.push_back(hello);
    else if (!take(hello)) return ncclInvalidUsage;  // two members claim one rank
  }
  for (int r = 1; r < nranks; ++r)
    MPI_Send(members.data(), nranks, MPI_INT, members[r], kMembersTag, MPI_COMM_WORLD);
  return ncclSuccess;
}

// ---- data types and the 16-bit sums

struct Bf16Sum {
  static float from(uint16_t b) { return __bfloat162float(__ushort_as_bfloat16(b)); }
  static uint16_t to(float v) { return __bfloat16_as_ushort(__float2bfloat16_rn(v)); }
};
struct Fp16Sum {
  static float from(uint16_t b) { return __half2float(__ushort_as_half(b)); }
  static uint16_t to(float v) { return __half_as_ushort(__float2half_rn(v)); }
};
// As NCCL reduces bf16/fp16: each partial sum added in float and rounded back to the format.
template <typename Format>
void sum_16bit(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Format::to(Format::from(a[i]) + Format::from(b[i]));
}

struct TypeInfo {
  MPI_Datatype mpi = MPI_DATATYPE_NULL;
  size_t bytes = 0;
  MPI_Op sum = MPI_OP_NULL;
};

bool type_info(ncclDataType_t type, TypeInfo& info) {
  static MPI_Op bf16_sum = MPI_OP_NULL;
  static MPI_Op fp16_sum = MPI_OP_NULL;
  switch (type) {
    case ncclFloat32: info = {MPI_FLOAT, 4, MPI_SUM}; return true;
    case ncclFloat64: info = {MPI_DOUBLE, 8, MPI_SUM}; return true;
    case ncclBfloat16:
      if (bf16_sum == MPI_OP_NULL) MPI_Op_create(&sum_16bit<Bf16Sum>, 1, &bf16_sum);
      info = {MPI_UINT16_T, 2, bf16_sum};
      return true;
    case ncclFloat16:
      if (fp16_sum == MPI_OP_NULL) MPI_Op_create(&sum_16bit<Fp16Sum>, 1, &fp16_sum);
      info = {MPI_UINT16_T, 2, fp16_sum};
      return true;
    default: return false;
  }
}

using mlps::detail::ranges_overlap;

// ---- operations, posted alone or as a group

struct Batch {
  std::vector<MPI_Request> requests;
  std::deque<std::vector<char>> scratch;  // copies of inputs that overlap their outputs
};

struct Operation {
  cudaStream_t stream;
  std::function<void(Batch&)> post;
};

thread_local int group_depth = 0;
thread_local std::vector<Operation> group_operations;

ncclResult_t run(std::vector<Operation> operations) {
  std::vector<cudaStream_t> streams;
  for (const Operation& op : operations)
    if (std::find(streams.begin(), streams.end(), op.stream) == streams.end())
      streams.push_back(op.stream);
  // The stand-in's own wait (through HIP, uncounted): NCCL would launch one kernel per
  // operation instead (counted), and the host would not wait.
  mlps::emulate::tally().launches.fetch_add(static_cast<int64_t>(operations.size()),
                                            std::memory_order_relaxed);
  for (cudaStream_t stream : streams)
    if (hipStreamSynchronize(stream) != hipSuccess) return ncclUnhandledCudaError;
  Batch batch;
  for (const Operation& op : operations) op.post(batch);
  MPI_Waitall(static_cast<int>(batch.requests.size()), batch.requests.data(),
              MPI_STATUSES_IGNORE);
  return ncclSuccess;
}

ncclResult_t submit(cudaStream_t stream, std::function<void(Batch&)> post) {
  if (group_depth > 0) {
    group_operations.push_back({stream, std::move(post)});
    return ncclSuccess;
  }
  return run({{stream, std::move(post)}});
}

ncclResult_t fail(ncclComm_t comm, ncclResult_t result, const std::string& why) {
  if (comm) comm->last_error = why;
  return result;
}

// The checks every operation shares: a live communicator, a type the stand-in knows, a sum.
ncclResult_t check(ncclComm_t comm, ncclDataType_t type, TypeInfo& info,
                   ncclRedOp_t op = ncclSum) {
  if (!comm) return ncclInvalidArgument;
  if (!mpi_usable()) return fail(comm, ncclSystemError, "MPI is not initialised or finalised");
  if (!type_info(type, info))
    return fail(comm, ncclInvalidArgument, "the stand-in carries float, double, bf16, fp16");
  if (op != ncclSum) return fail(comm, ncclInvalidArgument, "the stand-in reduces with ncclSum");
  return ncclSuccess;
}

int mpi_count(size_t count) { return static_cast<int>(count); }

// ncclSend and ncclRecv: the shared checks and a peer inside the communicator; `start` posts
// the MPI side of the transfer with the element type's MPI datatype.
template <typename Start>
ncclResult_t point_to_point(const char* what, ncclDataType_t datatype, int peer, ncclComm_t comm,
                            cudaStream_t stream, Start start) {
  TypeInfo t;
  if (const ncclResult_t result = check(comm, datatype, t)) return result;
  if (peer < 0 || peer >= comm->size)
    return fail(comm, ncclInvalidArgument, std::string(what) + " peer out of range");
  return submit(stream, [=](Batch& batch) { start(t.mpi, &batch.requests.emplace_back()); });
}

}  // namespace

ncclResult_t ncclGetVersion(int* version) {
  if (!version) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return ncclInvalidArgument;
  if (injected_failure("ncclGetUniqueId") || !mpi_usable()) return ncclSystemError;
  IdFields fields{};
  std::memcpy(fields.magic, kIdMagic, sizeof(kIdMagic));
  MPI_Comm_rank(MPI_COMM_WORLD, &fields.root_world_rank);
  fields.nonce = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  std::memset(id->internal, 0, sizeof(id->internal));
  std::memcpy(id->internal, &fields, sizeof(fields));
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (!comm || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  if (injected_failure("ncclCommInitRank") || !mpi_usable()) return ncclSystemError;
  IdFields fields{};
  std::memcpy(&fields, id.internal, sizeof(fields));
  if (std::memcmp(fields.magic, kIdMagic, sizeof(kIdMagic)) != 0) return ncclInvalidArgument;
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  std::vector<int> members(static_cast<size_t>(nranks), -1);
  if (rank == 0) {
    if (world_rank != fields.root_world_rank) return ncclInvalidUsage;
    members[0] = world_rank;
    if (const ncclResult_t result = gather_members(fields, nranks, members)) return result;
  } else {
    const Hello hello{fields.nonce, rank, world_rank};
    MPI_Send(&hello, sizeof(hello), MPI_BYTE, fields.root_world_rank, kHelloTag, MPI_COMM_WORLD);
    MPI_Recv(members.data(), nranks, MPI_INT, fields.root_world_rank, kMembersTag,
             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Group world_group = MPI_GROUP_NULL;
  MPI_Group group = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_incl(world_group, nranks, members.data(), &group);
  auto* created = new ncclComm();
  MPI_Comm_create_group(MPI_COMM_WORLD, group, kCreateTag, &created->mpi);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  created->rank = rank;
  created->size = nranks;
  *comm = created;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm) return ncclInvalidArgument;
  if (comm->mpi != MPI_COMM_NULL && mpi_usable()) MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
  }
  return "unknown result code";
}

const char* ncclGetLastError(ncclComm_t comm) { return comm ? comm->last_error.c_str() : ""; }

ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0) return ncclSuccess;
  return run(std::exchange(group_operations, {}));
}

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  TypeInfo t;
  if (const ncclResult_t result = check(comm, datatype, t, op)) return result;
  const size_t bytes = count * t.bytes;
  if (sendbuff != recvbuff && ranges_overlap(sendbuff, bytes, recvbuff, bytes))
    return fail(comm, ncclInvalidUsage, "all-reduce buffers overlap without being equal");
  return submit(stream, [=](Batch& batch) {
    const void* send = sendbuff == recvbuff ? MPI_IN_PLACE : sendbuff;
    MPI_Iallreduce(send, recvbuff, mpi_count(count), t.mpi, t.sum, comm->mpi,
                   &batch.requests.emplace_back());
  });
}

ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                           ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  TypeInfo t;
  if (const ncclResult_t result = check(comm, datatype, t)) return result;
  const size_t part = sendcount * t.bytes;
  const char* own_slot = static_cast<const char*>(recvbuff) + part * comm->rank;
  const bool in_place = sendbuff == own_slot;
  if (!in_place && ranges_overlap(sendbuff, part, recvbuff, part * comm->size))
    return fail(comm, ncclInvalidUsage, "all-gather input overlaps the output off its slot");
  return submit(stream, [=](Batch& batch) {
    MPI_Iallgather(in_place ? MPI_IN_PLACE : sendbuff, mpi_count(sendcount), t.mpi, recvbuff,
                   mpi_count(sendcount), t.mpi, comm->mpi, &batch.requests.emplace_back());
  });
}

ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                               ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream) {
  TypeInfo t;
  if (const ncclResult_t result = check(comm, datatype, t, op)) return result;
  const size_t part = recvcount * t.bytes;
  const size_t whole = part * comm->size;
  return submit(stream, [=](Batch& batch) {
    const void* send = sendbuff;
    if (ranges_overlap(sendbuff, whole, recvbuff, part)) {  // NCCL's in-place form: MPI needs a copy
      auto& copy = batch.scratch.emplace_back(static_cast<const char*>(sendbuff),
                                              static_cast<const char*>(sendbuff) + whole);
      send = copy.data();
    }
    MPI_Ireduce_scatter_block(send, recvbuff, mpi_count(recvcount), t.mpi, t.sum, comm->mpi,
                              &batch.requests.emplace_back());
  });
}

ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  TypeInfo t;
  if (const ncclResult_t result = check(comm, datatype, t)) return result;
  if (root < 0 || root >= comm->size)
    return fail(comm, ncclInvalidArgument, "broadcast root out of range");
  return submit(stream, [=](Batch& batch) {
    if (comm->rank == root && sendbuff != recvbuff)
      std::memmove(recvbuff, sendbuff, count * t.bytes);
    MPI_Ibcast(recvbuff, mpi_count(count), t.mpi, root, comm->mpi,
               &batch.requests.emplace_back());
  });
}

ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return point_to_point("send", datatype, peer, comm, stream,
                        [=](MPI_Datatype type, MPI_Request* request) {
                          MPI_Isend(sendbuff, mpi_count(count), type, peer, kPointToPointTag,
                                    comm->mpi, request);
                        });
}

ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
  return point_to_point("recv", datatype, peer, comm, stream,
                        [=](MPI_Datatype type, MPI_Request* request) {
                          MPI_Irecv(recvbuff, mpi_count(count), type, peer, kPointToPointTag,
                                    comm->mpi, request);
                        });
}
