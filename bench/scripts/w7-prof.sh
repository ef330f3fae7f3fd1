#!/bin/bash
# w7-prof.sh BIN LABEL [EXTRA]: fill 384 MiB of 1 KiB (no fsync), drop caches, drain with a CPU profile
BIN=$1; L=$2; EXTRA=$3
D=/tmp/w7-data-$L; rm -rf $D
GODEBUG=gctrace=1 $BIN standalone --data-dir $D --port 26680 --http-port 28095 --bookie-address 127.0.0.1:23196 \
  --metadata-listen http://127.0.0.1:22395 --metadata-peer http://127.0.0.1:22396 \
  --log-level warn --journal-sync-data=false --enable-pprof $EXTRA >/tmp/w7-$L.log 2>&1 &
SA=$!
for i in $(seq 100); do curl -sf http://127.0.0.1:28095/status.html >/dev/null && break; sleep 0.2; done
U=pulsar://127.0.0.1:26680
T=persistent://public/default/fill
timeout 10 $BIN perf consume $T -u $U --test-duration 2s >/dev/null 2>&1
$BIN perf produce $T -u $U -r 0 -s 1024 -m 393216 -o 10000 --json > /dev/null 2>&1
sync; echo 3 > /proc/sys/vm/drop_caches
G0=$(grep -c "^gc " /tmp/w7-$L.log)
S0=$(awk '{print $14+$15}' /proc/$SA/stat)
(curl -sf -o /tmp/w7-$L.cpu "http://127.0.0.1:28095/debug/pprof/profile?seconds=4" &)
$BIN perf consume $T -u $U -m 393216 --test-duration 60s --json > /tmp/w7-$L-c.json 2>/dev/null
S1=$(awk '{print $14+$15}' /proc/$SA/stat)
G1=$(grep -c "^gc " /tmp/w7-$L.log)
python3 -c "
import json;c=json.load(open('/tmp/w7-$L-c.json'));print('$L drain msg/s', int(c['msgPerSec']), 'secs %.1f'%c['seconds'], 'server cpu ticks', $S1-$S0, 'GCs', $G1-$G0)"
grep VmHWM /proc/$SA/status
kill $SA; wait $SA 2>/dev/null; rm -rf $D
