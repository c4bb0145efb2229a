// bin/data: data parallelism (DDP and ZeRO 1-3, hybrid sharding).
// The scheme is src/schemes/data/.
#include "src/schemes/data/data_scheme.h"

int main(int argc, char** argv) {
  return mlps::scheme_main(argc, argv, *mlps::make_data_scheme());
}
