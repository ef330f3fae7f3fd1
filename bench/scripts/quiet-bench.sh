#!/bin/bash
# The headline runs of docs/benchmarks.md in sequence: quiet-bench.sh BIN OUTDIR (run on an idle machine)
set -u
BIN=$1; OUT=$2; mkdir -p $OUT
cleanup() { kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; }
trap cleanup EXIT
uptime > $OUT/uptime-start.txt
# --- bookie (#3)
rm -rf /tmp/qb-bk; mkdir -p /tmp/qb-bk
$BIN bookie --listen 127.0.0.1:23181 --journal-directories /tmp/qb-bk/journal --ledger-directories /tmp/qb-bk/ledgers --metrics-listen 127.0.0.1:28000 --log-level warn > $OUT/bookie.log 2>&1 &
BK=$!
sleep 2
$BIN perf bookie --bookie 127.0.0.1:23181 --size 100,1024,65536 --in-flight 1,16,256 --duration 5s --bookie-metrics http://127.0.0.1:28000/metrics --probe-dir /tmp/qb-bk --probe-duration 2s > $OUT/perf-bookie.txt 2>&1
grep -E "VmRSS|VmHWM" /proc/$BK/status > $OUT/bookie-rss.txt
kill $BK; wait $BK 2>/dev/null
# --- standalone (#6)
rm -rf /tmp/qb-sa
$BIN standalone --data-dir /tmp/qb-sa --port 16650 --http-port 18080 --bookie-address 127.0.0.1:13181 --metadata-listen http://127.0.0.1:12379 --metadata-peer http://127.0.0.1:12380 --log-level warn > $OUT/sa.log 2>&1 &
SA=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:18080/status.html >/dev/null && break; sleep 0.2; done
U=pulsar://127.0.0.1:16650
for S in 100 1024; do
  $BIN perf produce persistent://public/default/b$S -u $U -r 0 -s $S -o 10000 --test-duration 15s --interval 0 --json > $OUT/max$S.json 2>$OUT/max$S.err
  MAX=$(python3 -c "import json;print(int(json.load(open('$OUT/max$S.json'))['msgPerSec']))")
  HALF=$((MAX/2))
  $BIN perf consume persistent://public/default/h$S -u $U --test-duration 23s --interval 0 --json > $OUT/half$S-consume.json 2>$OUT/half$S-consume.err &
  C=$!
  sleep 2
  $BIN perf produce persistent://public/default/h$S -u $U -r $HALF -s $S -o 10000 --test-duration 15s --interval 0 --json > $OUT/half$S.json 2>$OUT/half$S.err
  wait $C
done
grep -E "VmRSS|VmHWM" /proc/$SA/status > $OUT/sa-rss.txt
uptime > $OUT/uptime-end.txt
