// Package ownership decides which broker of a cluster serves a topic: a namespace is split
// into bundles (hash ranges of topic names, resources/bundles.go), and each bundle is owned by
// at most one broker through a key bound to that broker's metadata session.
//
// Metadata layout (JSON values; field names are Pulsar's where Pulsar has them):
//
//	/loadbalance/brokers/<host:port>        live broker, registered while its session lives:
//	                                        {"pulsarServiceUrl","webServiceUrl","instance",
//	                                         "load":{...}} (load report, loadreport.go, with
//	                                         per-bundle "bundleStats", bundlestats.go;
//	                                         "protocols":{"kafka":"PLAINTEXT://host:port"}
//	                                         when the broker serves Kafka too)
//	/namespace/<tenant>/<ns>/<0xlo_0xhi>    bundle owner, ephemeral, created with NotExists:
//	                                        {"nativeUrl","nativeUrlTls","httpUrl","httpUrlTls",
//	                                         "disabled","instance"}
//	/loadbalance/leader                     leader election of the brokers (campaign value: the
//	                                        leader's webServiceUrl); the leader assigns free
//	                                        bundles (assign.go) and sheds load (shed.go)
//
// "instance" is random per process, so a broker restarted on the same address never
// mistakes its predecessor's key (still alive until that lease expires) for its own.
//
// Safety does not rest on the lease: a broker paused past its TTL still believes it owns its
// bundles until it notices the session loss. What stops it is the ledger fence: the new owner
// opens each topic's managed ledger with recovery, which fences the old owner's ledger on the
// bookies, so the old owner's adds fail and it acknowledges nothing more (DESIGN.md,
// "Fencing is what makes ownership safe").
package ownership
