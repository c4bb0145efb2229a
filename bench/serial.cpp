// bin/serial: the whole model on one process, the reference every scheme is checked against.
#include "src/schemes/serial/serial_scheme.h"

int main(int argc, char** argv) { return mlps::scheme_main(argc, argv, *mlps::make_serial_scheme()); }
