#pragma once
// FC_Net with every layer whole on this rank (serial and data-parallel training, and the
// reference every scheme takes FC_Net's tensor names, ids and shapes from). Its parameters live
// in one ParameterList in FC_Net's order, which fixes the tensor ids; with
// ParameterStorage::external none are allocated and the scheme points them at its own storage.
#include <vector>

#include "src/model/fc_net.h"
#include "src/model/fused_weight_update.h"
#include "src/model/parameter_list.h"

namespace mlps {

template <typename T>
class SerialLayers : public LayerSet<T> {
 public:
  // fused: every Linear's weight update during backward (FusedWeightUpdate); null: none.
  SerialLayers(Device& device, ParameterStorage storage, FusedWeightUpdate<T>* fused = nullptr)
      : device_(device), params_(device, storage), fused_(fused) {}
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;
  void unit_made(int unit) override;

  ParameterList<T>& parameters() { return params_; }
  const std::vector<Parameter<T>*>& unit_parameters(int unit) const { return units_[unit]; }

 private:
  Device& device_;
  ParameterList<T> params_;
  FusedWeightUpdate<T>* fused_;
  size_t unit_first_ = 0;  // the first parameter of the unit being made
  std::vector<std::vector<Parameter<T>*>> units_;
};

// The layers exist before the net that is built from them (a base initialised first).
template <typename T>
struct OwnedLayers {
  SerialLayers<T> layers;
};

template <typename T>
class SerialNet : private OwnedLayers<T>, public FcNet<T> {
 public:
  SerialNet(Device& device, const ModelConfig& config, int64_t max_rows,
            ParameterStorage storage = ParameterStorage::owned,
            FusedWeightUpdate<T>* fused = nullptr)
      : OwnedLayers<T>{SerialLayers<T>(device, storage, fused)},
        FcNet<T>(device, config, max_rows, this->layers) {}
  // A pipeline stage's run of units; every parameter external (the stage gives its own storage).
  SerialNet(Device& device, const ModelConfig& config, int64_t max_rows, StageUnits units)
      : OwnedLayers<T>{SerialLayers<T>(device, ParameterStorage::external)},
        FcNet<T>(device, config, max_rows, this->layers, units) {}

  // Every FC_Net parameter in its order, and those of one unit.
  ParameterList<T>& parameters() { return this->layers.parameters(); }
  const std::vector<Parameter<T>*>& unit_parameters(int unit) const {
    return this->layers.unit_parameters(unit);
  }
};

}  // namespace mlps
