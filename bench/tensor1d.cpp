// bin/tensor1d: Megatron-LM tensor parallelism (column-parallel then row-parallel Linear, one
#include "src/schemes/tensor1d/tensor1d_scheme.h"

int main(int argc, char** argv) { return mlps::scheme_main(argc, argv, *mlps::make_tensor1d_scheme()); }
