#pragma once
// bin/data: data parallelism. DDP (bucketed gradient all-reduce overlapped with backward) and
#include <memory>

#include "src/driver/scheme_main.h"

namespace mlps {

std::unique_ptr<Scheme> make_data_scheme();

}  // namespace mlps
