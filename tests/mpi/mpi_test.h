#pragma once
// Support for the tests of bin/mpi_tests, which run under mpiexec with several ranks. Every rank
// runs every test, and only rank 0 prints, so each test ends with the ranks agreeing whether any
// of them failed (rank 0 then fails too, naming the ranks). Tests keep the same sequence of
// collectives on every rank: EXPECT, not ASSERT, wherever an early return would skip one.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

namespace mlps::testing {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

// True on every rank when `flag` holds on every rank: for decisions (skips) that must agree.
inline bool on_all_ranks(bool flag) {
  int value = flag ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return value == 1;
}

class MpiTest : public ::testing::Test {
 protected:
  void TearDown() override {
    const int failed = HasFailure() ? 1 : 0;
    std::vector<int> all(static_cast<size_t>(world_size()));
    MPI_Allgather(&failed, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    if (world_rank() != 0) return;
    std::string ranks;
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r]) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (!ranks.empty()) ADD_FAILURE() << "failed on rank(s) " << ranks << " (messages on stderr)";
  }
};

template <typename T>
class TypedMpiTest : public MpiTest {};

}  // namespace mlps::testing
