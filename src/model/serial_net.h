#pragma once
// FC_Net with every layer whole on this rank (serial and data-parallel training, and the
// reference every scheme takes FC_Net's tensor names, ids and shapes from). Its parameters live
// in one ParameterList in FC_Net's order, which fixes the tensor ids; with
// ParameterStorage::external none are allocated and the scheme points them at its own storage.
#include <vector>

#include "src/model/fc_net.h"
#include "src/model/layer_observer.h"
#include "src/model/parameter_list.h"

namespace mlps {

template <typename T>
class SerialLayers : public LayerSet<T> {
 public:
  SerialLayers(Device& device, ParameterStorage storage) : device_(device), params_(device, storage) {}
  std::unique_ptr<Linear<T>> linear(const std::string& name, int64_t in, int64_t out) override;
  std::unique_ptr<LayerNorm<T>> layer_norm(const std::string& name, int64_t features) override;
  void unit_made(int unit) override;

  ParameterList<T>& parameters() { return params_; }
  const std::vector<Parameter<T>*>& unit_parameters(int unit) const { return units_[unit]; }

 private:
  Device& device_;
  ParameterList<T> params_;
  size_t unit_first_ = 0;  // the first parameter of the unit being made
  std::vector<std::vector<Parameter<T>*>> units_;
};

template <typename T>
class SerialNet : private UnitHooks {
 public:
  SerialNet(Device& device, const ModelConfig& config, int64_t max_rows,
            ParameterStorage storage = ParameterStorage::owned);
  SerialNet(const SerialNet&) = delete;
  SerialNet& operator=(const SerialNet&) = delete;

  double forward(const HostBatch& batch) { return net_.forward(batch); }
  double forward(const T* host_inputs, const int32_t* host_labels, int64_t rows) {
    return net_.forward(host_inputs, host_labels, rows);
  }
  void backward(int64_t rows, int64_t global_batch, bool accumulate) {
    net_.backward(rows, global_batch, accumulate);
  }
  std::vector<int32_t> predictions(int64_t rows) const { return net_.predictions(rows); }

  ParameterList<T>& parameters() { return layers_.parameters(); }
  int unit_count() const { return net_.unit_count(); }
  const std::vector<Parameter<T>*>& unit_parameters(int unit) const {
    return layers_.unit_parameters(unit);
  }
  // Hooks around each unit's forward and backward, with its parameters (null: none).
  void set_observer(LayerObserver<T>* observer) { observer_ = observer; }
  void set_timer(PhaseTimer* timer) { net_.set_timer(timer); }
  const ModelConfig& config() const { return net_.config(); }
  int64_t max_rows() const { return net_.max_rows(); }

 private:
  void before_forward(int unit) override;
  void after_forward(int unit) override;
  void before_backward(int unit) override;
  void after_backward(int unit) override;

  SerialLayers<T> layers_;
  FcNet<T> net_;
  LayerObserver<T>* observer_ = nullptr;
};

}  // namespace mlps
