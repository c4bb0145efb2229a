#pragma once
// --prefetch: the next batch loaded on a thread while the step computes, or in its data phase.
// auto is on unless the node's ranks' compute threads fill its cores, where the loader would
// time-share a core with a rank (docs/model-and-data.md). The runs and bin/plan
// both decide by loads_ahead.
namespace mlps {

enum class PrefetchMode { automatic, on, off };

inline const char* to_string(PrefetchMode mode) {
  return mode == PrefetchMode::on ? "on" : mode == PrefetchMode::off ? "off" : "auto";
}

// `busy_threads`: the node's ranks' compute threads (0 where they compute on GPUs).
inline bool loads_ahead(PrefetchMode mode, int busy_threads, int cores) {
  if (mode != PrefetchMode::automatic) return mode == PrefetchMode::on;
  return busy_threads < cores;
}

}  // namespace mlps
