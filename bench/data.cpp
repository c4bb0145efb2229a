// bin/data: data parallelism. DDP (bucketed gradient all-reduce overlapped with backward) and
#include "src/schemes/data/data_scheme.h"

int main(int argc, char** argv) { return mlps::scheme_main(argc, argv, *mlps::make_data_scheme()); }
