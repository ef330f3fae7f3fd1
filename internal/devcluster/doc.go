// Package devcluster runs a local Magnetar cluster as child processes on loopback: three
// `magnetar metadata` members, bookies and brokers, with their data and logs under one
// directory (<dir>/<name>/ and <dir>/<name>.log). `magnetar dev-cluster` and the cluster's
// end-to-end tests use it; tests reach each process (Proc) to kill, pause or restart it.
package devcluster
