#!/bin/bash
# w7-alloc.sh BIN LABEL: fill 384 MiB of 1 KiB (no fsync), drop caches, drain; heap profiles before/after the drain
# (compare with go tool pprof -sample_index=alloc_space -base /tmp/w7a-LABEL-0.heap /tmp/w7a-LABEL-1.heap) and read-cache metrics
BIN=$1; L=$2
D=/tmp/w7a-$L; rm -rf $D
$BIN standalone --data-dir $D --port 26680 --http-port 28095 --bookie-address 127.0.0.1:23196 \
  --metadata-listen http://127.0.0.1:22395 --metadata-peer http://127.0.0.1:22396 \
  --log-level warn --journal-sync-data=false --enable-pprof >/tmp/w7a-$L.log 2>&1 &
SA=$!
for i in $(seq 100); do curl -sf http://127.0.0.1:28095/status.html >/dev/null && break; sleep 0.2; done
U=pulsar://127.0.0.1:26680; T=persistent://public/default/fill
timeout 10 $BIN perf consume $T -u $U --test-duration 2s >/dev/null 2>&1
$BIN perf produce $T -u $U -r 0 -s 1024 -m 393216 -o 10000 --json > /dev/null 2>&1
sync; echo 3 > /proc/sys/vm/drop_caches
curl -sf http://127.0.0.1:28095/debug/pprof/heap > /tmp/w7a-$L-0.heap
$BIN perf consume $T -u $U -m 393216 --test-duration 60s --json > /tmp/w7a-c.json 2>/dev/null
curl -sf http://127.0.0.1:28095/debug/pprof/heap > /tmp/w7a-$L-1.heap; curl -sf http://127.0.0.1:28095/metrics | grep -E "^bookie_read_cache|^bookie_read_entry_latency_seconds_count|^bookie_request" > /tmp/w7a-$L.metrics
kill $SA; wait $SA 2>/dev/null; rm -rf $D
