#pragma once
// Parameters copied to the host in fp64 under their names: what --verify compares. A scheme that
// holds the model whole copies its parameters; one that shards them lists the runs of each
// tensor a rank holds, and the full tensors are reassembled on rank 0.
#include <mpi.h>

#include <string>
#include <vector>

#include "kernels/stored_values.h"
#include "src/model/parameter.h"
#include "src/schemes/trainer.h"

namespace mlps {

template <typename T, typename Params>
void append_named_tensors(const Params& params, std::vector<NamedTensor>& out) {
  for (const auto& p : params) {
    const Parameter<T>& param = *p;
    const auto values = param.value.download();
    std::vector<double> wide(values.size());
    for (size_t i = 0; i < values.size(); ++i) wide[i] = static_cast<double>(widen(values[i]));
    out.push_back({param.name, std::move(wide)});
  }
}

// A run of one of FC_Net's tensors on this rank: element k of the run is values[offset + k] and
// element first + k, row-major, of a block block_cols wide whose (0, 0) is the tensor's
// (row0, col0); elements past the tensor's edge (padding) are dropped.
struct HeldRun {
  std::string name;
  int64_t rows = 1, cols = 1;  // the whole tensor
  int64_t row0 = 0, col0 = 0, block_cols = 1, first = 0;
  int64_t offset = 0, count = 0;
  bool owner = true;  // else a copy of elements another rank owns: compared, not summed
};

struct GatheredTensors {
  std::vector<NamedTensor> tensors;  // on rank 0, in the runs' order; empty elsewhere
  // With compare_copies: the largest spread between the holders of one element, and its
  // tensor (empty while every copy equals its owner's).
  double copy_spread = 0;
  std::string most_spread;
};

// Collective over world: every rank lists the same tensors in the same order (a run may hold
// nothing). Plain MPI: verification traffic is not part of the measurements.
GatheredTensors gather_held_tensors(const std::vector<HeldRun>& runs,
                                    const std::vector<double>& values, MPI_Comm world,
                                    bool compare_copies = false);

}  // namespace mlps
