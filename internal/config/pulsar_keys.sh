#!/usr/bin/env bash
# Regenerates pulsar_keys.txt: the names of every configuration key Pulsar and BookKeeper
# read (broker.conf and standalone.conf: ServiceConfiguration's fields; proxy.conf:
# ProxyConfiguration's; functions_worker.yml: WorkerConfig's; bookkeeper.conf: BookKeeper's
# configuration key constants and bk_server.conf; client.conf: the CLI tools' keys), plus keys of older Pulsar versions and
# of authentication providers that Pulsar reads from its properties. Key names are facts we
# carry over; nothing else of those projects is kept.
#
# Needs Maven (jars from Maven Central, cached in ~/.m2) and a JDK's javap.
set -euo pipefail
PULSAR=${PULSAR:-4.0.6}
BK=${BK:-4.17.1}
cd "$(dirname "$0")"
R=${HOME}/.m2/repository
for a in org.apache.pulsar:pulsar-broker-common:$PULSAR org.apache.pulsar:pulsar-proxy:$PULSAR \
         org.apache.pulsar:pulsar-functions-runtime:$PULSAR org.apache.bookkeeper:bookkeeper-server:$BK; do
	mvn -q dependency:get -Dartifact="$a" -Dtransitive=false
done
fields() { # private instance fields of a class: the keys FieldParser sets by name
	javap -p -cp "$1" "$2" | grep -E '^\s+private [^(]*;$' | grep -v ' static ' | sed -E 's/.* ([A-Za-z0-9_]+);$/\1/'
}
tmp=$(mktemp)
{
	fields "$R/org/apache/pulsar/pulsar-broker-common/$PULSAR/pulsar-broker-common-$PULSAR.jar" org.apache.pulsar.broker.ServiceConfiguration
	fields "$R/org/apache/pulsar/pulsar-proxy/$PULSAR/pulsar-proxy-$PULSAR.jar" org.apache.pulsar.proxy.server.ProxyConfiguration
	fields "$R/org/apache/pulsar/pulsar-functions-runtime/$PULSAR/pulsar-functions-runtime-$PULSAR.jar" org.apache.pulsar.functions.worker.WorkerConfig
	for c in AbstractConfiguration ServerConfiguration; do
		javap -constants -p -cp "$R/org/apache/bookkeeper/bookkeeper-server/$BK/bookkeeper-server-$BK.jar" org.apache.bookkeeper.conf.$c |
			grep -E 'static final java.lang.String [A-Z_0-9]+ = "[a-zA-Z][A-Za-z0-9_.]*";' | sed -E 's/.* = "(.*)";/\1/'
	done
	# bk_server.conf's keys (set and commented out) that live outside those classes
	# (dbStorage_*, stats providers): the list below was read off BookKeeper's conf/bk_server.conf.
	sed -n '/^# bk_server.conf$/,/^# end$/p' pulsar_keys.txt | grep -v '^#'
	# client.conf (pulsar-admin, pulsar-client), older Pulsar versions, auth providers.
	sed -n '/^# extra$/,/^# end$/p' pulsar_keys.txt | grep -v '^#'
} | grep -vx properties | sort -u > "$tmp"
{
	sed -n '1,/^# keys$/p' pulsar_keys.txt
	cat "$tmp"
	sed -n '/^# bk_server.conf$/,$p' pulsar_keys.txt
} > pulsar_keys.txt.new
mv pulsar_keys.txt.new pulsar_keys.txt
rm -f "$tmp"
