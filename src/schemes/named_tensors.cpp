#include "src/schemes/named_tensors.h"

#include <limits>

namespace mlps {
namespace {

// Calls place(index in the whole tensor, value) for each of the run's elements inside it.
template <typename Place>
void for_each_element(const HeldRun& run, const std::vector<double>& values, Place place) {
  for (int64_t k = 0; k < run.count; ++k) {
    const int64_t e = run.first + k;
    const int64_t row = run.row0 + e / run.block_cols, col = run.col0 + e % run.block_cols;
    if (row < run.rows && col < run.cols) place(row * run.cols + col, values[run.offset + k]);
  }
}

}  // namespace

GatheredTensors gather_held_tensors(const std::vector<HeldRun>& runs,
                                    const std::vector<double>& values, MPI_Comm world,
                                    bool compare_copies) {
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  GatheredTensors out;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (const HeldRun& run : runs) {
    const size_t size = static_cast<size_t>(run.rows * run.cols);
    // Owners write their elements into a zeroed tensor: the sum is the tensor.
    std::vector<double> full(size, 0.0), sum(rank == 0 ? size : 0);
    if (run.owner) for_each_element(run, values, [&](int64_t i, double v) { full[i] = v; });
    MPI_Reduce(full.data(), sum.data(), static_cast<int>(size), MPI_DOUBLE, MPI_SUM, 0, world);
    if (compare_copies) {
      std::vector<double> high(size, -kInf), low(size, kInf);
      for_each_element(run, values, [&](int64_t i, double v) { high[i] = low[i] = v; });
      MPI_Allreduce(MPI_IN_PLACE, high.data(), static_cast<int>(size), MPI_DOUBLE, MPI_MAX, world);
      MPI_Allreduce(MPI_IN_PLACE, low.data(), static_cast<int>(size), MPI_DOUBLE, MPI_MIN, world);
      for (size_t i = 0; i < size; ++i) {
        const double spread = high[i] - low[i];
        if (!(spread <= out.copy_spread)) {  // NaN counts as a difference
          out.copy_spread = spread;
          out.most_spread = run.name;
        }
      }
    }
    if (rank == 0) out.tensors.push_back({run.name, std::move(sum)});
  }
  return out;
}

}  // namespace mlps
