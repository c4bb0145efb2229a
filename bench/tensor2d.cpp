// bin/tensor2d: 2D tensor parallelism (SUMMA).
// The scheme is src/schemes/tensor2d/.
#include "src/schemes/tensor2d/tensor2d_scheme.h"

int main(int argc, char** argv) {
  return mlps::scheme_main(argc, argv, *mlps::make_tensor2d_scheme());
}
