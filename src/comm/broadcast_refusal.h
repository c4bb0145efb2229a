#pragma once
// One rank's text given to every rank, and the refusal built on it: a check that one rank makes
// (rank 0 probing an output path, the rank that fits memory worst) ends every rank with the same
// AgreedError, so all print one line and exit together instead of some waiting in a collective.
#include <mpi.h>

#include <string>

namespace mlps {

// Collective over comm: `text` of rank `root`, on every rank (its length, then its bytes).
std::string broadcast_string(MPI_Comm comm, std::string text, int root);

// Collective over comm: when rank `root`'s `refusal` is not empty, every rank throws it as an
// AgreedError; otherwise returns on every rank.
void refuse_together(MPI_Comm comm, std::string refusal, int root);

}  // namespace mlps
