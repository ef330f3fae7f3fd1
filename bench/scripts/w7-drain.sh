#!/bin/bash
# w7-drain.sh MODE BIN LABEL: the W7 shape on one standalone, for looking inside a catch-up
# drain. A standalone with --journal-sync-data=false and pprof; a subscription whose consumer
# left; 384 MiB of 1 KiB messages at max rate; sync and drop_caches; then a consumer drains it.
#   heap   VmHWM after the fill and after the drain, RSS and a heap profile 1.5 s into the
#          drain (/tmp/w7-LABEL.heap), the managed-ledger cache size then
#   prof   a 4 s CPU profile from the drain's start (/tmp/w7-LABEL.cpu), drain msg/s, server
#          CPU ticks and collections during the drain (GODEBUG=gctrace=1)
#   alloc  heap profiles before and after the drain (/tmp/w7-LABEL-{0,1}.heap: compare with
#          go tool pprof -sample_index=alloc_space -base ...) and the read-cache counters
# Needs root for drop_caches. Ports 26680, 28095, 23196, 22395-22396.
MODE=$1; BIN=$2; L=$3
D=/tmp/w7-data-$L; rm -rf $D
HTTP=http://127.0.0.1:28095
GODEBUG=gctrace=1 $BIN standalone --data-dir $D --port 26680 --http-port 28095 --bookie-address 127.0.0.1:23196 \
  --metadata-listen http://127.0.0.1:22395 --metadata-peer http://127.0.0.1:22396 \
  --log-level warn --journal-sync-data=false --enable-pprof >/tmp/w7-$L.log 2>&1 &
SA=$!
for i in $(seq 100); do curl -sf $HTTP/status.html >/dev/null && break; sleep 0.2; done
U=pulsar://127.0.0.1:26680; T=persistent://public/default/fill
timeout 10 $BIN perf consume $T -u $U --test-duration 2s >/dev/null 2>&1
$BIN perf produce $T -u $U -r 0 -s 1024 -m 393216 -o 10000 --json > /dev/null 2>&1
echo "after fill: $(grep VmHWM /proc/$SA/status)"
sync; echo 3 > /proc/sys/vm/drop_caches
drain() { $BIN perf consume $T -u $U -m 393216 --test-duration 60s --json > /tmp/w7-$L-c.json 2>/dev/null; }
G0=$(grep -c "^gc " /tmp/w7-$L.log); S0=$(awk '{print $14+$15}' /proc/$SA/stat)
case $MODE in
heap)
  drain & CP=$!
  sleep 1.5; curl -sf $HTTP/debug/pprof/heap > /tmp/w7-$L.heap
  echo "mid drain: $(grep VmRSS /proc/$SA/status) ml cache bytes=$(curl -sf $HTTP/metrics | grep '^pulsar_ml_cache_used_size' | cut -d' ' -f2)"
  wait $CP ;;
prof)
  (curl -sf -o /tmp/w7-$L.cpu "$HTTP/debug/pprof/profile?seconds=4" &)
  drain ;;
alloc)
  curl -sf $HTTP/debug/pprof/heap > /tmp/w7-$L-0.heap
  drain
  curl -sf $HTTP/debug/pprof/heap > /tmp/w7-$L-1.heap
  curl -sf $HTTP/metrics | grep -E '^bookie_read_cache' ;;
esac
S1=$(awk '{print $14+$15}' /proc/$SA/stat); G1=$(grep -c "^gc " /tmp/w7-$L.log)
python3 -c "
import json;c=json.load(open('/tmp/w7-$L-c.json'));print('$L drain msg/s', int(c['msgPerSec']), 'secs %.1f'%c['seconds'], 'server cpu ticks', $S1-$S0, 'GCs', $G1-$G0)"
echo "after drain: $(grep VmHWM /proc/$SA/status)"
kill $SA; wait $SA 2>/dev/null; rm -rf $D
