#!/bin/sh
# Async events through the drop-in libibverbs: verbs_async_program overruns a CQ against
# `vhca-sim serve` and must read IBV_EVENT_CQ_ERR and IBV_EVENT_QP_FATAL from its context's
# async_fd, and another context's attempts to free its objects must be refused (exit 0); the
# server's report counts the two events for that client and none for the others.
#   verbs_async_events.sh VHCA_SIM LIBDIR PROGRAM
set -eu
. "$(dirname "$0")/verbs_common.sh"
start_server "$1" "$2"
# Our own program, built with the library: leaks are checked in it under the sanitizer build.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=1" timeout 60 "$3" >"$dir/program.out" 2>&1 ||
  fail "verbs_async_program failed"
cat "$dir/program.out"
wait_reports 3
[ "$(grep "on vhca0 left at" "$dir/serve.out" | grep -c "0 completion events, 2 async events")" -eq 1 ] ||
  fail "the server did not count 2 async events for one client of vhca0"
grep "on vhca0 left at" "$dir/serve.out" | grep -q "0 completion events, 0 async events" || fail "the second context of vhca0 got async events"
grep "on vhca1 left at" "$dir/serve.out" | grep -q "0 completion events, 1 async events" || fail "vhca1's client did not get its SRQ's event alone"
stop_server
echo "two async events delivered to their owner only"
