#pragma once
// The optimizer's settings (--optimizer, --lr), below the options that set them and the
// optimizer that uses them.
namespace mlps {

enum class OptimizerKind { adam, sgd };

struct OptimizerConfig {
  OptimizerKind kind = OptimizerKind::adam;
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

}  // namespace mlps
