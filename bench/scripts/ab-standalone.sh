#!/bin/bash
# A/B of standalone publish at a fixed rate: ab-standalone.sh BIN LABEL SIZE RATE (prints publish and end-to-end p50/p99 and peak RSS)
BIN=$1; L=$2; S=$3; R=$4
rm -rf /tmp/ab-sa
$BIN standalone --data-dir /tmp/ab-sa --port 16660 --http-port 18090 --bookie-address 127.0.0.1:13191 --metadata-listen http://127.0.0.1:12389 --metadata-peer http://127.0.0.1:12390 --log-level warn >/tmp/ab-sa.log 2>&1 &
SA=$!
for i in $(seq 50); do curl -sf http://127.0.0.1:18090/status.html >/dev/null && break; sleep 0.2; done
U=pulsar://127.0.0.1:16660
$BIN perf consume persistent://public/default/ab -u $U --test-duration 16s --interval 0 --json > /tmp/ab-c.json 2>/dev/null &
C=$!
sleep 1.5
$BIN perf produce persistent://public/default/ab -u $U -r $R -s $S -o 10000 --test-duration 12s --interval 0 --json > /tmp/ab-p.json 2>/dev/null
wait $C
python3 -c "
import json
p=json.load(open('/tmp/ab-p.json'));c=json.load(open('/tmp/ab-c.json'))
print('$L size $S rate $R: pub', int(p['msgPerSec']), 'p50', p['latencyP50Ms'], 'p99', p['latencyP99Ms'], '| e2e p50', c['latencyP50Ms'], 'p99', c['latencyP99Ms'])"
echo "$L $(grep VmHWM /proc/$SA/status)"
kill $SA; wait $SA 2>/dev/null; rm -rf /tmp/ab-sa
