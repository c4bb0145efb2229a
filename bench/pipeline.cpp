// bin/pipeline: pipeline (inter-layer) parallelism, GPipe, 1F1B, interleaved 1F1B, ZB-H1 or
#include "src/schemes/pipeline/pipeline_scheme.h"

int main(int argc, char** argv) { return mlps::scheme_main(argc, argv, *mlps::make_pipeline_scheme()); }
