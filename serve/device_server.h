// `vhca-sim serve`: the simulated HCAs as devices that verbs programs open through the drop-in
// libibverbs (verbs/). The server owns a System of `devices` hosts, boots their drivers (the kernel side:
// vhca's driver stays the driver, as a kernel driver serves uverbs), and answers the library's
// requests over a Unix socket (verbs/protocol.h, docs/verbs-protocol.md).
//
// Each connection that opens a device is served by its own SystemC thread in simulated time; the
// serving loop holds simulated time while any client thread runs its own code (the time rule,
// docs/verbs-programs.md).
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include <systemc>

namespace vhca {

struct ServeOptions {
  std::string socket_path;  // empty: VHCA_SOCKET, else wire::kDefaultSocket
  bool quiet = false;
  // HCAs: 1 (its port looped back), 2 (on one IB link) or more (each cabled to one IB switch).
  uint32_t devices = 2;
  std::string json_path;  // non-empty: each client's counters and latencies, rewritten as each leaves
  std::string timeline_path;  // non-empty: a Perfetto timeline of the clients' work, written at the end
  // The longest an empty poll of a program's CQs lasts in simulated time when nothing it can see
  // changes (assumption: long against a poll, short against a message's latency).
  sc_core::sc_time poll_interval{1, sc_core::SC_US};
  // The most it grows to while nothing the program can see changes (assumption: a thousandth of
  // RC's default retransmission timeout at timeout=14, 67 ms).
  sc_core::sc_time poll_interval_max{64, sc_core::SC_US};
  // How long a client may run its own code (wall clock) with nothing new to react to before it
  // stops holding simulated time (the spin rule, docs/verbs-programs.md). Assumption: far longer
  // than a program's work between two verbs (microseconds), short enough that a program spinning
  // on its memory costs about this much wall time per message.
  std::chrono::microseconds spin_grace{1000};
  // --port-down: the IB link of `device` goes down `at_us` of simulated time after a program first
  // opens the device's async channel (ibv_open_device) or, with `at_doorbell` N, as the device's
  // N-th doorbell is rung, and comes back `for_us` later (0: stays down). With two devices on one
  // link, both ports go down. (Simulated time runs free while every program sleeps outside verbs,
  // as in a TCP handshake, so a time may pass before a program's traffic starts; a doorbell count
  // puts the outage at the same point of its traffic on every run.)
  struct PortDown {
    uint32_t device = 0;
    uint64_t at_doorbell = 0;
    double at_us = 0, for_us = 0;
  };
  std::vector<PortDown> port_downs;
};

// Serves until SIGINT or SIGTERM; returns the process exit code (0, or 1 if the socket could not
// be opened or the HCAs did not boot).
int run_device_server(const ServeOptions& o);

}  // namespace vhca
