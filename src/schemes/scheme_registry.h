#pragma once
// The registry of schemes: every executable's definition (options, grid rules, memory, per-rank
// work, training) in one list that bin/plan, its candidates and the docs iterate. Adding a
// scheme: a folder src/schemes/<scheme>/ with its Scheme and make_<scheme>_scheme()
// (docs/architecture.md), one line in scheme_registry.cpp, bench/<scheme>.cpp calling
// scheme_main with it, and its tests.
#include <memory>
#include <vector>

#include "src/driver/scheme_main.h"
#include "src/plan/plan_candidates.h"

namespace mlps {

// Every scheme, in the order bin/plan lists its candidates.
std::vector<std::unique_ptr<Scheme>> scheme_registry();

// Every candidate for `world` ranks that a scheme accepts (each scheme's add_candidates), each
// with checkpointing off and on, in each of `precisions`.
std::vector<PlanCandidate> enumerate_candidates(const Options& options, int world,
                                                const std::vector<Precision>& precisions);

}  // namespace mlps
