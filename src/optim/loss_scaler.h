#pragma once
// Dynamic loss scaling for fp16 training (as torch.cuda.amp.GradScaler): the loss gradient is
// multiplied by scale() so small gradients survive fp16; the optimizer divides it out. A step
// whose gradients hold an inf or NaN (on any rank) is skipped and the scale halves; after
// growth_interval clean steps in a row the scale doubles.
#include <cstdint>

namespace mlps {

struct LossScalerConfig {
  double initial_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScalerConfig& config = {})
      : config_(config), scale_(config.initial_scale) {}

  double scale() const { return scale_; }
  // Records one step's outcome and returns whether its update must be applied (false: skip).
  // Every rank must pass the same found_nonfinite (reduce it over all ranks first).
  bool update(bool found_nonfinite) {
    if (found_nonfinite) {
      scale_ *= config_.backoff_factor;
      clean_in_a_row_ = 0;
      ++skipped_;
      return false;
    }
    if (++clean_in_a_row_ == config_.growth_interval) {
      scale_ *= config_.growth_factor;
      clean_in_a_row_ = 0;
    }
    return true;
  }
  int64_t skipped_steps() const { return skipped_; }

 private:
  LossScalerConfig config_;
  double scale_;
  int64_t clean_in_a_row_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace mlps
