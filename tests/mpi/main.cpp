// GoogleTest main for bin/mpi_tests (run as mpiexec -n N bin/mpi_tests). Rank 0 prints the usual
// output; the other ranks print only their failures, tagged with the rank, to stderr. Every rank
// exits non-zero if any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include "kernels/cpu/blas_core.h"
#include "src/comm/bounded_finalize.h"

#include <cstdio>
#include <string>

namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  // The test's name is kept from OnTestStart: asking UnitTest for it here would deadlock on
  // the lock GoogleTest holds while reporting a result.
  void OnTestStart(const ::testing::TestInfo& test) override {
    test_ = std::string(test.test_suite_name()) + "." + test.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s: %s:%d: failure\n%s\n", rank_, test_.c_str(),
                 result.file_name() ? result.file_name() : "unknown", result.line_number(),
                 result.message());
  }

 private:
  int rank_;
  std::string test_;
};

}  // namespace

int main(int argc, char** argv) {
  mlps::cpu::choose_blas_core(argv);  // the kernels under test are the ones the runs use
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  mlps::finalize_within("mpi_tests (rank " + std::to_string(rank) + ")", failed);
  return failed;
}
