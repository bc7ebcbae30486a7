#!/bin/sh
# Debian's own ibv_devices and ibv_devinfo, unmodified, against `vhca-sim serve` through the
# drop-in libibverbs: both list vhca0 and vhca1 with their GUIDs, LIDs, port state and GID; an
# unknown device is refused; without a server there are no devices; SIGTERM stops the server,
# which removes its socket.
#   verbs_devices.sh VHCA_SIM LIBDIR
set -eu
sim=$1
lib=$2
for tool in ibv_devices ibv_devinfo; do
  command -v $tool >/dev/null || { echo "FAIL: $tool not found: install ibverbs-utils (tools/bootstrap.sh does)"; exit 1; }
done
. "$(dirname "$0")/verbs_common.sh"
start_server "$sim" "$lib"

ibv_devices >"$dir/devices.txt" 2>&1 || fail "ibv_devices exited with an error" "$dir/devices.txt"
grep -Eq '^ +vhca0 +.5648434100000001$' "$dir/devices.txt" || fail "ibv_devices does not list vhca0" "$dir/devices.txt"
grep -Eq '^ +vhca1 +.5648434100000002$' "$dir/devices.txt" || fail "ibv_devices does not list vhca1" "$dir/devices.txt"

ibv_devinfo -v >"$dir/devinfo.txt" 2>&1 || fail "ibv_devinfo -v exited with an error" "$dir/devinfo.txt"
for want in 'hca_id:.vhca0' 'hca_id:.vhca1' 'transport:.*InfiniBand' 'node_guid:.*5648:4341:0000:0001' \
            'state:.*PORT_ACTIVE \(4\)' 'port_lid:.*1$' 'port_lid:.*2$' 'active_mtu:.*4096' \
            'link_layer:.*InfiniBand' 'GID\[  0\]:.*fe80:0000:0000:0000:5648:4341:0000:0002'; do
  grep -Eq "$want" "$dir/devinfo.txt" || fail "ibv_devinfo -v shows no line matching '$want'" "$dir/devinfo.txt"
done
echo "ibv_devices and ibv_devinfo -v: vhca0 and vhca1 listed"

if ibv_devinfo -d vhca7 >"$dir/none.txt" 2>&1; then fail "ibv_devinfo -d vhca7 succeeded" "$dir/none.txt"; fi
grep -q "vhca7' wasn't found" "$dir/none.txt" || fail "no error for vhca7" "$dir/none.txt"

# Every public name@version of Debian's libibverbs is exported (the binaries bind them all at
# load): no loader error. The programs themselves run in verbs_pair.sh.
system_lib=$(ls /usr/lib/*/libibverbs.so.1 /usr/lib/libibverbs.so.1 2>/dev/null | head -1)
[ -n "$system_lib" ] || fail "Debian's libibverbs.so.1 not found (package libibverbs1, which ibverbs-utils needs)" /dev/null
command -v objdump >/dev/null || fail "objdump not found (package binutils)" /dev/null
{
  exports() { objdump -T "$1" | awk '/DF .text/ && $(NF-1) !~ /\(/ && $(NF-1) !~ /PRIVATE/ {print $(NF-1), $NF}' | sort; }
  exports "$system_lib" >"$dir/want.txt"
  exports "$lib/libibverbs.so.1" >"$dir/have.txt"
  cmp -s "$dir/want.txt" "$dir/have.txt" || { diff "$dir/want.txt" "$dir/have.txt" >"$dir/sym.diff" || true; fail "exported versions differ from $system_lib" "$dir/sym.diff"; }
  echo "all $(wc -l <"$dir/want.txt") public verbs exported under Debian's versions"
}
# Without a server the library finds no device (the checks above would fail on this output).
VHCA_SOCKET="$dir/nobody.sock" ibv_devices >"$dir/empty.txt"
if grep -q vhca "$dir/empty.txt"; then fail "devices listed without a server" "$dir/empty.txt"; fi

stop_server
echo "server stopped on SIGTERM and removed its socket"
