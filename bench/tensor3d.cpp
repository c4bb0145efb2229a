// bin/tensor3d: 3D tensor parallelism (AxoNN).
// The scheme is src/schemes/tensor3d/.
#include "src/schemes/tensor3d/tensor3d_scheme.h"

int main(int argc, char** argv) {
  return mlps::scheme_main(argc, argv, *mlps::make_tensor3d_scheme());
}
