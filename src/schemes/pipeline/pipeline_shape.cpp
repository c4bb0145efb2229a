#include "src/schemes/pipeline/pipeline_shape.h"

#include "src/base/errors.h"

namespace mlps {
namespace {

using Kind = PipelineScheduleKind;
using Pass = PipelineAction::Pass;

constexpr struct {
  Kind kind;
  const char* name;
} kNames[] = {{Kind::gpipe, "gpipe"},
              {Kind::one_f_one_b, "1f1b"},
              {Kind::interleaved, "interleaved"},
              {Kind::zb_h1, "zb-h1"},
              {Kind::zb_v, "zb-v"}};

}  // namespace

std::vector<std::string> pipeline_schedule_names() {
  std::vector<std::string> names;
  for (const auto& entry : kNames) names.push_back(entry.name);
  return names;
}

const char* to_string(PipelineScheduleKind kind) {
  for (const auto& n : kNames)
    if (n.kind == kind) return n.name;
  return "?";
}

PipelineScheduleKind parse_pipeline_schedule(const std::string& text) {
  for (const auto& n : kNames)
    if (text == n.name) return n.kind;
  throw InputError("--schedule must be gpipe, 1f1b, interleaved, zb-h1 or zb-v, not '" + text +
                   "'");
}

bool splits_backward(PipelineScheduleKind kind) {
  return kind == Kind::zb_h1 || kind == Kind::zb_v;
}

int PipelineShape::virtual_stage(int rank, int chunk) const {
  if (kind == Kind::zb_v) return chunk == 0 ? rank : 2 * stages - 1 - rank;
  return chunk * stages + rank;
}

int PipelineShape::rank_of(int vs) const {
  if (kind == Kind::zb_v) return vs < stages ? vs : 2 * stages - 1 - vs;
  return vs % stages;
}

int PipelineShape::chunk_of(int vs) const { return vs / stages; }

PipelineShape make_pipeline_shape(PipelineScheduleKind kind, int stages, int micro_batches,
                                  int virtual_stages) {
  const int chunks = kind == Kind::interleaved ? virtual_stages : kind == Kind::zb_v ? 2 : 1;
  return {kind, stages, micro_batches, chunks};
}

bool releases_activations(const PipelineAction& action) {
  return action.pass == Pass::backward || action.pass == Pass::backward_weight;
}

}  // namespace mlps
