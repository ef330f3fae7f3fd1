#!/bin/bash
# stalls.sh BIN LABEL [RATE] [SIZE] [SECONDS]: a standalone without journal fsync (D2), a
# consumer, and a producer at RATE msg/s of SIZE bytes for SECONDS; prints the seconds whose
# maximum publish latency passed 50 ms, and the whole run's latency summary. Periodic
# stalls (rotations, flushes, writeback) show up as a second number that repeats with the
# data volume. Ports 26680, 28095, 23196, 22395-22396.
BIN=$1; L=$2; RATE=${3:-34394}; SIZE=${4:-1024}; SECS=${5:-75}
D=/tmp/stalls-$L; rm -rf $D
$BIN standalone --data-dir $D --port 26680 --http-port 28095 --bookie-address 127.0.0.1:23196 \
  --metadata-listen http://127.0.0.1:22395 --metadata-peer http://127.0.0.1:22396 \
  --log-level info --journal-sync-data=false > /tmp/stalls-$L.log 2>&1 &
SA=$!
for i in $(seq 100); do curl -sf http://127.0.0.1:28095/status.html >/dev/null && break; sleep 0.2; done
U=pulsar://127.0.0.1:26680; T=persistent://public/default/stalls
$BIN perf consume $T -u $U --test-duration $((SECS + 5))s --interval 0 > /dev/null 2>&1 &
sleep 1
$BIN perf produce $T -u $U -r $RATE -s $SIZE -o 1000 --test-duration ${SECS}s --interval 1s > /tmp/stalls-$L-p.txt 2>&1
kill $SA; wait $SA 2>/dev/null; wait; rm -rf $D
echo "$L seconds with max > 50 ms: $(grep 'Throughput produced' /tmp/stalls-$L-p.txt | awk -F'Max:' '$2+0 > 50 {printf "%d(%d ms) ", NR, $2}')"
grep Aggregated /tmp/stalls-$L-p.txt | tail -1
