#pragma once
// How the classifier's logits are spread over the ranks of a group. Rank p holds columns
// [first[p], first[p] + count[p]) of the [rows × C] logits in a [rows × width[p]] block
// (width ≥ count: padding columns are zero); the all-gather moves every block padded to
// `block` columns, so every rank of the group assembles the full logits and computes the same
// softmax cross-entropy, then keeps its own columns of ∂L/∂logits.
#include <cstdint>
#include <vector>

#include "src/comm/communicator.h"

namespace mlps {

struct LogitSplit {
  Communicator* group = nullptr;  // null: this rank's classifier computes all C logits
  std::vector<int64_t> first, count, width;
  int64_t block = 0;
};

}  // namespace mlps
