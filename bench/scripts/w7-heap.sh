#!/bin/bash
# w7-heap.sh BIN LABEL: fill 384 MiB of 1 KiB (no fsync), drop caches, drain; VmHWM after the fill and the drain, RSS and a heap profile 1.5 s into the drain
BIN=$1; L=$2
D=/tmp/w7h-$L; rm -rf $D
$BIN standalone --data-dir $D --port 26680 --http-port 28095 --bookie-address 127.0.0.1:23196 \
  --metadata-listen http://127.0.0.1:22395 --metadata-peer http://127.0.0.1:22396 \
  --log-level warn --journal-sync-data=false --enable-pprof >/tmp/w7h-$L.log 2>&1 &
SA=$!
for i in $(seq 100); do curl -sf http://127.0.0.1:28095/status.html >/dev/null && break; sleep 0.2; done
U=pulsar://127.0.0.1:26680; T=persistent://public/default/fill
timeout 10 $BIN perf consume $T -u $U --test-duration 2s >/dev/null 2>&1
$BIN perf produce $T -u $U -r 0 -s 1024 -m 393216 -o 10000 --json > /dev/null 2>&1
echo "after fill: $(grep VmHWM /proc/$SA/status)"
sync; echo 3 > /proc/sys/vm/drop_caches
$BIN perf consume $T -u $U -m 393216 --test-duration 60s --json > /tmp/w7h-c.json 2>/dev/null &
CP=$!
sleep 1.5; curl -sf http://127.0.0.1:28095/debug/pprof/heap > /tmp/w7h-$L.heap
echo "mid drain: $(grep -E 'VmRSS' /proc/$SA/status) cache=$(curl -sf http://127.0.0.1:28095/metrics | grep -E '^pulsar_ml_cache_used_size' | cut -d' ' -f2)"
wait $CP
echo "after drain: $(grep VmHWM /proc/$SA/status)"
kill $SA; wait $SA 2>/dev/null; rm -rf $D
