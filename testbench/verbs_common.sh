# Shared by the verbs program tests (sourced): a `vhca-sim serve` of their own on a fresh socket,
# failure reports, and a pingpong pair (the server side on vhca0, the client on vhca1).
#   . verbs_common.sh; start_server VHCA_SIM LIBDIR [SERVER OPTIONS...]
# sets $dir (a temporary folder, removed on exit), $sock, $pid (the server), and exports
# VHCA_SOCKET and LD_LIBRARY_PATH for the programs.
start_server() {
  dir=${dir:-$(mktemp -d)}  # a caller may make it first, to name files in it for the server
  sock=$dir/vhca.sock
  server_sim=$1
  server_lib=$2
  shift 2
  "$server_sim" serve --socket "$sock" "$@" >"$dir/serve.out" 2>&1 &
  pid=$!
  trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
  i=0
  while [ ! -S "$sock" ]; do
    i=$((i + 1))
    [ $i -le 300 ] || { echo "FAIL: the server did not open $sock"; cat "$dir/serve.out"; exit 1; }
    sleep 0.1
  done
  export VHCA_SOCKET="$sock" LD_LIBRARY_PATH="$server_lib"
}

# fail MESSAGE: prints it and every output the test kept, and exits 1.
fail() {
  echo "FAIL: $1"
  for f in "$dir"/*.out "$dir"/*.txt; do
    [ -e "$f" ] && { echo "--- $f:"; cat "$f"; }
  done
  exit 1
}

# The programs' own exchange of addresses is TCP, as on real hardware: a port of this test's.
port=$((20000 + $$ % 20000))

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
    [ $i -le 100 ] || fail "the server did not report $1 clients gone"
    sleep 0.1
  done
}

# stop_server: SIGTERM; it must exit 0 and remove its socket.
stop_server() {
  kill -TERM $pid
  wait $pid || fail "the server exited with an error on SIGTERM"
  [ ! -e "$sock" ] || fail "the server left its socket behind"
}
