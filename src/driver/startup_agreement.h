#pragma once
// What every rank agrees on before the first collective that could block: that each rank's
// options were accepted, and that all ranks run the same configuration. A rank refused alone
// would otherwise exit while the others wait for it in their first collective forever, and ranks
// given different sizes would train (or exchange) something that means nothing. Each function is
// one collective over `comm` and throws InputError on every rank when the ranks do not agree, so
// each prints one line and all exit together.
#include <mpi.h>

#include <string>

namespace mlps {

// `refusal`: this rank's error ("" when its options were accepted). Throws it on this rank, and
// on the others a line naming the lowest refusing rank.
void agree_options_accepted(MPI_Comm comm, const std::string& refusal);

// `resolved`: this rank's options as one JSON object (Options::resolved_json), `program` the
// executable's name. Throws on every rank, naming the first option (in rank 0's order) that
// some rank has differently, the lowest such rank, and both values. --out, --trace and
// --timeout may differ (only rank 0 writes; each rank has its own watchdog).
void agree_configuration(MPI_Comm comm, const std::string& program, const std::string& resolved);

}  // namespace mlps
