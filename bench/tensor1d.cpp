// bin/tensor1d: 1D tensor parallelism (Megatron-LM, sequence parallelism).
// The scheme is src/schemes/tensor1d/.
#include "src/schemes/tensor1d/tensor1d_scheme.h"

int main(int argc, char** argv) {
  return mlps::scheme_main(argc, argv, *mlps::make_tensor1d_scheme());
}
