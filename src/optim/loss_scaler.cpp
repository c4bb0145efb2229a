#include "src/optim/loss_scaler.h"

namespace mlps {

bool LossScaler::update(bool found_nonfinite) {
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

}  // namespace mlps
