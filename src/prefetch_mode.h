#pragma once
// --prefetch: whether a rank loads its next batch on a thread of its own while the step computes
// (on), or in the step's data phase (off). auto is on unless the compute threads of the node's
// ranks already fill its cores: there the loader's thread only time-shares a core with a rank,
// which costs the step more than loading in its own data phase (README, "The model, data and
// results"). The runs and bin/plan both decide by loads_ahead.
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
