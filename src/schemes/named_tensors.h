#pragma once
// Parameters copied to the host in fp64 under their names: what --verify compares.
#include <vector>

#include "src/model/parameter.h"
#include "src/schemes/trainer.h"

namespace mlps {

template <typename T, typename Params>
void append_named_tensors(const Params& params, std::vector<NamedTensor>& out) {
  for (const auto& p : params) {
    const Parameter<T>& param = *p;
    const auto values = param.value.download();
    out.push_back({param.name, std::vector<double>(values.begin(), values.end())});
  }
}

}  // namespace mlps
