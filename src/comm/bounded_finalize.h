#pragma once
// MPI_Finalize with a bounded wait. UCX 1.13's TCP transport (what MPICH's ch4:ucx uses between
// nodes without a faster network) sometimes never completes closing its endpoints in
// MPI_Finalize, after every rank has done its work and written its results: one node's ranks
// spin in ucp_worker_progress while the others wait in the PMI barrier (openucx/ucx#8738; on
// this project's shaped two-node cluster about 1 run in 2). A healthy finalize takes well under
// a second, even across thousands of ranks; past kFinalizeLimit the process says so in one line
// and exits with the status the run had, instead of hanging until the job's time limit.
#include <chrono>
#include <string>

namespace mlps {

inline constexpr std::chrono::seconds kFinalizeLimit{10};

// MPI_Finalize(); if it has not returned after `limit`, prints "<who>: MPI_Finalize had not
// returned after N s ...; exiting with status <code>" and exits with `code` at once.
void finalize_within(const std::string& who, int code,
                     std::chrono::seconds limit = kFinalizeLimit);

}  // namespace mlps
