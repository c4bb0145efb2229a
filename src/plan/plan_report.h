#pragma once
// bin/plan's output: the ranked table, one candidate's breakdown (--explain) and the whole
// plan as JSON (--out), for tools.
#include <cstdio>
#include <string>
#include <vector>

#include "src/plan/step_prediction.h"

namespace mlps {

struct PlannedCandidate {
  PlanCandidate candidate;
  StepPrediction prediction;
};

// Fitting candidates by predicted step, fastest first, then those that do not fit.
void rank_candidates(std::vector<PlannedCandidate>& plan);

// The rate each precision's GEMMs are priced at, one line per precision in the plan.
void print_gemm_rates(std::FILE* out, const std::vector<PlannedCandidate>& plan);
void print_plan_table(std::FILE* out, const std::vector<PlannedCandidate>& plan, size_t rows);
// Row `row` (1-based, as the table numbers it).
void print_explanation(std::FILE* out, const PlannedCandidate& planned, size_t row);
// Published whole (no partial file); std::runtime_error naming what failed.
void write_plan_json(const std::string& path, const std::vector<PlannedCandidate>& plan,
                     const std::string& machine, const std::string& options_json);

}  // namespace mlps
