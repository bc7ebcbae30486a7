# Shared by the verbs program tests (sourced): a `vhca-sim serve` of their own on a fresh socket,
# failure reports, and a pingpong pair (the server side on vhca0, the client on vhca1).
#   . verbs_common.sh; start_server VHCA_SIM LIBDIR [SERVER OPTIONS...]
# sets $dir (a temporary folder, removed on exit), $sock, $pid (the server), and exports
# VHCA_SOCKET and LD_LIBRARY_PATH for the programs.
# The sanitizer options the test was started with: every server gets them (leak checks on), not
# the programs' (below), which a first start_server exports.
server_asan_options=${server_asan_options-${ASAN_OPTIONS-}}
start_server() {
  dir=${dir:-$(mktemp -d)}  # a caller may make it first, to name files in it for the server
  sock=$dir/vhca.sock
  server_sim=$1
  server_lib=$2
  shift 2
  ASAN_OPTIONS="$server_asan_options" "$server_sim" serve --socket "$sock" "$@" >"$dir/serve.out" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null || true; [ -n "${VHCA_KEEP:-}" ] || rm -rf "$dir"' EXIT
  # Its banner ("... on SOCKET") is printed after listen(): the socket file alone appears at bind(),
  # and a program connecting between the two would be refused.
  i=0
  until [ -S "$sock" ] && grep -Fq " on $sock" "$dir/serve.out" 2>/dev/null; do
    i=$((i + 1))
    [ $i -le 300 ] || { echo "FAIL: the server did not listen on $sock"; cat "$dir/serve.out"; exit 1; }
    kill -0 $pid 2>/dev/null || { echo "FAIL: the server exited before listening"; cat "$dir/serve.out"; exit 1; }
    sleep 0.1
  done
  export VHCA_SOCKET="$sock" LD_LIBRARY_PATH="$server_lib"
  # The sanitizer build's library carries ASan, whose runtime must come first in a program built
  # without it (Debian's): ctest names it in VHCA_ASAN_PRELOAD, and every program started from
  # here on loads it. Memory errors are checked in them all; leaks not, since Debian's programs
  # keep some of their own memory to the end (perftest frees neither its device list nor its
  # parameters). The servers' leaks are checked (each starts with the test's own options), and so
  # are the library's, in verbs_async_program, which frees everything it makes
  # (verbs_async_events.sh).
  if [ -n "${VHCA_ASAN_PRELOAD:-}" ]; then
    export LD_PRELOAD="$VHCA_ASAN_PRELOAD" ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  fi
}

# fail MESSAGE: prints it and every output the test kept, and exits 1.
fail() {
  echo "FAIL: $1"
  for f in "$dir"/*.out "$dir"/*.txt; do
    [ -e "$f" ] && { echo "--- $f:"; cat "$f"; }
  done
  exit 1
}

# The programs' own exchange of addresses is TCP, as on real hardware: a port of this test's,
# below Linux's ephemeral range (32768 up), where another test's outgoing connection could hold it.
port=$((20000 + $$ % 12000))

# wait_listening PID: until the program PID listens on $port (state 0A in /proc/net/tcp{,6}); the
# client side does not retry its connect.
wait_listening() {
  port_hex=$(printf '%04X' $port)
  i=0
  until cat /proc/net/tcp /proc/net/tcp6 2>/dev/null | awk -v p=":$port_hex" '$2 ~ p"$" && $4 == "0A" {f=1} END {exit !f}'; do
    i=$((i + 1))
    [ $i -le 600 ] || fail "the program on vhca0 did not start listening on port $port"
    kill -0 $1 2>/dev/null || fail "the program on vhca0 exited before listening"
    sleep 0.1
  done
}

# wait_reports N: until the server has reported N clients gone.
wait_reports() {
  i=0
  while [ "$(grep -c 'left at' "$dir/serve.out")" -lt $1 ]; do
    i=$((i + 1))
    [ $i -le 300 ] || fail "the server did not report $1 clients gone"
    sleep 0.1
  done
}

# run_pair PROGRAM ITERS [ARGS...]: the program's server side on vhca0 and its client on vhca1
# (over loopback TCP on $port), both to exit 0 having reported ITERS iterations; outputs in
# $dir/side0.out and side1.out. perftest's ib_* run with Debian's libibverbs on their library path
# and vhca's preload variant in front of it; the others with the drop-in library.
run_pair() {
  pair_prog=$1
  pair_iters=$2
  shift 2
  case $pair_prog in
    ib_*) pair_run="env -u LD_LIBRARY_PATH LD_PRELOAD=${VHCA_ASAN_PRELOAD:+$VHCA_ASAN_PRELOAD:}$server_lib/libvhca-verbs-preload.so.1"; pair_row="^ *[0-9]+ +$pair_iters +" ;;
    *) pair_run="env"; pair_row="^$pair_iters iters in" ;;
  esac
  $pair_run timeout 300 $pair_prog -d vhca0 -p $port -n $pair_iters "$@" >"$dir/side0.out" 2>&1 &
  pair_side0=$!
  wait_listening $pair_side0
  pair_rc1=0
  $pair_run timeout 300 $pair_prog -d vhca1 -p $port -n $pair_iters "$@" 127.0.0.1 >"$dir/side1.out" 2>&1 || pair_rc1=$?
  pair_rc0=0
  wait $pair_side0 || pair_rc0=$?
  [ $pair_rc0 -eq 0 ] || fail "$pair_prog on vhca0 exited with $pair_rc0"
  [ $pair_rc1 -eq 0 ] || fail "$pair_prog on vhca1 exited with $pair_rc1"
  for side in 0 1; do
    grep -Eq "$pair_row" "$dir/side$side.out" || fail "$pair_prog side $side did not report $pair_iters iterations"
  done
}

# stop_server: SIGTERM; it must exit 0 and remove its socket.
stop_server() {
  kill -TERM $pid
  wait $pid || fail "the server exited with an error on SIGTERM"
  [ ! -e "$sock" ] || fail "the server left its socket behind"
}
