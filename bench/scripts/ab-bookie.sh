#!/bin/bash
# A/B of the bookie alone, 256 adds in flight: ab-bookie.sh BIN LABEL [VAR=value ...] (env for the bookie)
BIN=$1; L=$2; shift 2
rm -rf /tmp/ab-bk; mkdir -p /tmp/ab-bk
env "$@" $BIN bookie --listen 127.0.0.1:23191 --journal-directories /tmp/ab-bk/journal --ledger-directories /tmp/ab-bk/ledgers --metrics-listen 127.0.0.1:28010 --log-level warn >/tmp/ab-bk.log 2>&1 &
BK=$!
sleep 1.5
$BIN perf bookie --bookie 127.0.0.1:23191 --size 100,1024,65536 --in-flight 256 --duration 5s --bookie-metrics http://127.0.0.1:28010/metrics 2>&1 | grep -E "^ +[0-9]" | sed "s/^/$L /"
echo "$L $(grep VmHWM /proc/$BK/status)"
kill $BK; wait $BK 2>/dev/null
rm -rf /tmp/ab-bk
