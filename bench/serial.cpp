// bin/serial: serial training, the reference every scheme is checked against.
// The scheme is src/schemes/serial/.
#include "src/schemes/serial/serial_scheme.h"

int main(int argc, char** argv) {
  return mlps::scheme_main(argc, argv, *mlps::make_serial_scheme());
}
