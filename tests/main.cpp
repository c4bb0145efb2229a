// GoogleTest main for bin/unit_tests: MPI is initialised because the library's result and
// run-info code asks MPI for ranks and host names.
#include <gtest/gtest.h>
#include <mpi.h>

#include "kernels/cpu/blas_core.h"

int main(int argc, char** argv) {
  mlps::cpu::choose_blas_core(argv);  // the kernels under test are the ones the runs use
  MPI_Init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  const int status = RUN_ALL_TESTS();
  MPI_Finalize();
  return status;
}
