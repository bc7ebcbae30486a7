// `vhca-sim serve`: the simulated HCAs as devices that verbs programs open through the drop-in
// libibverbs (verbs/). The server owns a two-host System, boots both drivers (the kernel side:
// vhca's driver stays the driver, as a kernel driver serves uverbs), and answers the library's
// requests over a Unix socket (verbs/protocol.h, docs/verbs-protocol.md).
//
// This first stage serves device discovery and the device, port and GID queries (ibv_devices,
// ibv_devinfo); objects, the data path and simulated time for clients come next (issue
// "Unmodified verbs programs").
#pragma once
#include <string>

namespace vhca {

struct ServeOptions {
  std::string socket_path;  // empty: VHCA_SOCKET, else wire::kDefaultSocket
  bool quiet = false;
};

// Serves until SIGINT or SIGTERM; returns the process exit code (0, or 1 if the socket could not
// be opened or the HCAs did not boot).
int run_device_server(const ServeOptions& o);

}  // namespace vhca
