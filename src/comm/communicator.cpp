#include "src/comm/communicator.h"

namespace mlps {

size_t size_of(DataType type) { return type == DataType::f64 ? sizeof(double) : sizeof(float); }

}  // namespace mlps
