// bin/pipeline: pipeline parallelism (GPipe, 1F1B, interleaved, ZB-H1, ZB-V).
// The scheme is src/schemes/pipeline/.
#include "src/schemes/pipeline/pipeline_scheme.h"

int main(int argc, char** argv) {
  return mlps::scheme_main(argc, argv, *mlps::make_pipeline_scheme());
}
