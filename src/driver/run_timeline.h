#pragma once
// --trace for one run: a TraceRecorder (src/timing/trace_recorder.h) that the phase timer and
// the trainer's communication log feed for as long as this lives, written at the end. Without
// --trace it holds nothing and the timer and log skip recording at a null check.
#include <optional>
#include <string>

#include "src/driver/run_context.h"
#include "src/options/options.h"
#include "src/schemes/trainer.h"
#include "src/timing/trace_recorder.h"

namespace mlps {

class RunTimeline {
 public:
  // Collective. Checks --trace's file as --out's is checked (every rank refuses an unwritable
  // one, before any training) and refuses --out's own path.
  RunTimeline(const RunContext& context, const Options& options, PhaseTimer& timer,
              Trainer& trainer);
  ~RunTimeline();
  RunTimeline(const RunTimeline&) = delete;
  RunTimeline& operator=(const RunTimeline&) = delete;

  // Records an evaluation between steps that began at `start` (TraceRecorder::now()).
  void evaluation(double start);
  // Collective: rank 0 writes the file and says where, with its size.
  void write(const RunContext& context, const Options& options, const Trainer& trainer) const;

 private:
  PhaseTimer& timer_;
  Trainer& trainer_;
  std::optional<TraceRecorder> recorder_;
};

}  // namespace mlps
