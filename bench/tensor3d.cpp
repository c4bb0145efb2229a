// bin/tensor3d: AxoNN-style 3D tensor parallelism (G_r × G_c × G_d = --tp-dims x,y,z), every
#include "src/schemes/tensor3d/tensor3d_scheme.h"

int main(int argc, char** argv) { return mlps::scheme_main(argc, argv, *mlps::make_tensor3d_scheme()); }
