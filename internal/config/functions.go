package config

import (
	"errors"
)

// FunctionsWorkerConfig is the Pulsar Functions worker (internal/functions): in the broker
// with functionsWorkerEnabled (on in standalone) or as `magnetar functions-worker`. Keys are
// Pulsar's functions_worker.yml names where one exists; the others are ours and say so.
type FunctionsWorkerConfig struct {
	// WorkerID names this worker in assignments and /admin/v2/worker/cluster; empty derives
	// it from the advertised host and HTTP port.
	WorkerID       string `key:"workerId" help:"this worker's id (empty: host-port)"`
	WorkerHostname string `key:"workerHostname" help:"host other workers and tools reach this worker's HTTP at (empty: the advertised address)"`
	// PulsarServiceURL is what instances connect to (empty in a broker: the broker itself).
	PulsarServiceURL string `key:"pulsarServiceUrl" help:"pulsar:// URL function instances connect to (empty in a broker or standalone: itself)"`
	// PulsarWebServiceURL is the admin REST instances and tools are told about.
	PulsarWebServiceURL string `key:"pulsarWebServiceUrl" help:"http:// admin URL of the cluster (empty in a broker or standalone: itself)"`
	// DownloadDirectory caches packages and holds Python virtualenvs and instance logs.
	DownloadDirectory string `key:"downloadDirectory" help:"directory for function packages, virtualenvs and instance logs (empty: <data dir>/functions)"`

	// RescheduleTimeoutMs is how long the leader waits after a worker vanished before moving
	// its instances; FailureCheckFreqMs how often it looks.
	RescheduleTimeoutMs int64 `key:"rescheduleTimeoutMs" help:"ms after a worker vanished before its instances move to others"`
	FailureCheckFreqMs  int64 `key:"failureCheckFreqMs" help:"ms between the leader's checks for vanished workers"`
	// InstanceLivenessCheckFreqMs is how often a worker health-checks its instances.
	InstanceLivenessCheckFreqMs int64 `key:"instanceLivenessCheckFreqMs" help:"ms between health checks of each instance"`
	// SessionTimeoutMs is the metadata session TTL of the worker's membership key (ours;
	// must be well under rescheduleTimeoutMs).
	SessionTimeoutMs int64 `key:"functionsWorkerSessionTimeoutMs" help:"ms after which a silent worker's membership expires (ours)"`
	// NumFunctionPackageReplicas is the ensemble and write quorum of package ledgers.
	NumFunctionPackageReplicas int `key:"numFunctionPackageReplicas" help:"bookies each function package is stored on"`

	// MaxPackageSizeMB bounds one uploaded package (ours).
	MaxPackageSizeMB int64 `key:"functionsMaxPackageSizeMB" help:"largest function package accepted, in MiB (ours)"`
	// MaxParallelism bounds one function's parallelism (ours).
	MaxParallelism int `key:"functionsMaxParallelism" help:"largest parallelism of one function (ours)"`
	// MaxRestartBackoffMs caps the wait before restarting an instance that keeps failing (ours).
	MaxRestartBackoffMs int64 `key:"functionsMaxRestartBackoffMs" help:"longest wait before restarting a failing instance, in ms (ours)"`
	// PythonInterpreter builds each Python function's virtualenv (ours).
	PythonInterpreter string `key:"pythonInterpreter" help:"python3 used to build each Python function's virtualenv (ours)"`
	// PythonPulsarClientVersion pins the pulsar-client wheel installed for Python functions (ours).
	PythonPulsarClientVersion string `key:"functionsPythonPulsarClientVersion" help:"version of the pulsar-client wheel Python functions get (ours)"`
	// WasmMaxMemoryMB bounds a WASM instance's linear memory (also bounded by its
	// resources.ram); WasmMaxInvocationMs one call into it (ours).
	WasmMaxMemoryMB     int64 `key:"functionsWasmMaxMemoryMB" help:"most linear memory of one WASM instance, in MiB (ours)"`
	WasmMaxInvocationMs int64 `key:"functionsWasmMaxInvocationMs" help:"longest one call into a WASM function may run, in ms (ours)"`
	// WasmCompiler compiles WASM modules to machine code (fast calls; a few seconds to start
	// a large module); false interprets them (ours).
	WasmCompiler bool `key:"functionsWasmCompiler" help:"compile WASM functions to machine code (false: interpret them) (ours)"`
	// MaxStateValueBytes bounds one state value (ours; the metadata store holds state).
	MaxStateValueBytes int `key:"functionsMaxStateValueBytes" help:"largest value of one state key, in bytes (ours)"`
}

// DefaultFunctionsWorkerConfig returns Pulsar's defaults where it has them.
func DefaultFunctionsWorkerConfig() FunctionsWorkerConfig {
	return FunctionsWorkerConfig{
		RescheduleTimeoutMs:         60000,
		FailureCheckFreqMs:          30000,
		InstanceLivenessCheckFreqMs: 30000,
		SessionTimeoutMs:            10000,
		NumFunctionPackageReplicas:  1,
		MaxPackageSizeMB:            256,
		MaxParallelism:              256,
		MaxRestartBackoffMs:         60000,
		PythonInterpreter:           "python3",
		PythonPulsarClientVersion:   "3.13.0",
		WasmMaxMemoryMB:             128,
		WasmMaxInvocationMs:         10000,
		WasmCompiler:                true,
		MaxStateValueBytes:          1 << 20,
	}
}

// Validate checks the worker settings.
func (c *FunctionsWorkerConfig) Validate() error {
	errs := []error{
		AtLeast("rescheduleTimeoutMs", c.RescheduleTimeoutMs, 1),
		AtLeast("failureCheckFreqMs", c.FailureCheckFreqMs, 1),
		AtLeast("instanceLivenessCheckFreqMs", c.InstanceLivenessCheckFreqMs, 1),
		Between("functionsWorkerSessionTimeoutMs", c.SessionTimeoutMs, 1000, 600000),
		Between("numFunctionPackageReplicas", c.NumFunctionPackageReplicas, 1, 16),
		Between("functionsMaxPackageSizeMB", c.MaxPackageSizeMB, 1, 4096),
		Between("functionsMaxParallelism", c.MaxParallelism, 1, 10000),
		AtLeast("functionsMaxRestartBackoffMs", c.MaxRestartBackoffMs, 100),
		NotEmpty("pythonInterpreter", c.PythonInterpreter),
		Between("functionsWasmMaxMemoryMB", c.WasmMaxMemoryMB, 1, 4096),
		AtLeast("functionsWasmMaxInvocationMs", c.WasmMaxInvocationMs, 1),
		Between("functionsMaxStateValueBytes", c.MaxStateValueBytes, 1, 1<<20),
	}
	if c.SessionTimeoutMs >= c.RescheduleTimeoutMs {
		errs = append(errs, &FieldError{Key: "functionsWorkerSessionTimeoutMs", Value: c.SessionTimeoutMs, Reason: "must be below rescheduleTimeoutMs, or a worker that is only slow loses its instances"})
	}
	return errors.Join(errs...)
}

// FunctionsWorkerRoleConfig is `magnetar functions-worker`: a worker of its own against a
// cluster's metadata store and brokers.
type FunctionsWorkerRoleConfig struct {
	MetadataStoreURL  string `key:"metadataStoreUrl" flag:"metadata-url" help:"metadata store URL (etcd://host:2379,...)"`
	BindAddress       string `key:"bindAddress" help:"host the worker's HTTP listener binds to"`
	WorkerPort        int    `key:"workerPort" flag:"port" help:"HTTP port of the worker's REST API (0: any free port)"`
	AdvertisedAddress string `key:"advertisedAddress" flag:"advertised-address" help:"host other workers reach this one at"`
	DataDir           string `key:"dataDir" flag:"data-dir" help:"directory for packages, virtualenvs and instance logs"`
	ClusterName       string `key:"pulsarFunctionsCluster" flag:"cluster" help:"cluster the worker serves"`

	// Security: the keys of Pulsar's functions_worker.yml, which are the broker's names
	// (security.go). The REST API is authenticated and authorized with the broker's rules
	// (internal/admin/secure.go); Client is the worker's own credentials towards the brokers
	// and other workers (its instances connect with them too), so superUserRoles of the
	// brokers must name its role.
	WorkerPortTLS int `key:"workerPortTls" flag:"port-tls" help:"HTTPS port of the worker's REST API (-1: none, 0: any free port)"`
	TLS           TLSServerConfig
	Authn         AuthenticationConfig
	Authz         AuthorizationConfig
	Client        ClientAuthConfig
	// MetadataTLS is how the worker reaches etcd over TLS (metadataStoreConfigPath); the
	// bookies' TLS is Ledger's.
	MetadataTLS MetadataClientTLSConfig

	Functions FunctionsWorkerConfig
	Ledger    LedgerClientConfig
}

// DefaultFunctionsWorkerRoleConfig returns the role's defaults.
func DefaultFunctionsWorkerRoleConfig() FunctionsWorkerRoleConfig {
	return FunctionsWorkerRoleConfig{
		BindAddress: "0.0.0.0", WorkerPort: 6750, AdvertisedAddress: "127.0.0.1", DataDir: "./data/functions-worker",
		ClusterName: "standalone", Functions: DefaultFunctionsWorkerConfig(), Ledger: DefaultLedgerClientConfig(),
		WorkerPortTLS: -1, TLS: DefaultTLSServerConfig(), Authn: DefaultAuthenticationConfig(), Authz: DefaultAuthorizationConfig(),
	}
}

// Security is the role's security settings in the broker's shape (no binary listener:
// brokerServicePortTls stays off), for internal/auth.NewBrokerSecurity.
func (c *FunctionsWorkerRoleConfig) Security() SecurityConfig {
	port := c.WorkerPortTLS
	if !c.ServesTLS() {
		port = -1
	}
	return SecurityConfig{ServicePortTLS: -1, WebServicePortTLS: port, TLS: c.TLS, Authn: c.Authn, Authz: c.Authz, Client: c.Client}
}

// ServesTLS says whether the worker serves HTTPS on workerPortTls. Pulsar's worker serves it
// only with tlsEnabled, and its shipped functions_worker.yml sets workerPortTls: 6751 with
// tlsEnabled: false and no certificate; so a workerPortTls without tlsEnabled and without a
// certificate is that file's unused default, not a listener to refuse to start over. With a
// certificate the port is served (as a broker's webServicePortTls is, tlsEnabled being
// deprecated there); with tlsEnabled and no certificate Validate fails.
func (c *FunctionsWorkerRoleConfig) ServesTLS() bool {
	return c.WorkerPortTLS >= 0 && (c.TLS.Configured() || c.TLS.TLSEnabled)
}

// Validate checks the role's settings.
func (c *FunctionsWorkerRoleConfig) Validate() error {
	return errors.Join(
		NotEmpty("metadataStoreUrl", c.MetadataStoreURL),
		Between("workerPort", c.WorkerPort, 0, 65535),
		NotEmpty("dataDir", c.DataDir),
		NotEmpty("pulsarServiceUrl", c.Functions.PulsarServiceURL),
		Between("workerPortTls", c.WorkerPortTLS, -1, 65535),
		c.TLS.Validate(), c.Authn.Validate(), c.Authz.Validate(), c.Client.Validate(),
		c.tlsListener(),
		c.Functions.Validate(),
		c.Ledger.Validate(),
	)
}

func (c *FunctionsWorkerRoleConfig) tlsListener() error {
	var errs []error
	if c.ServesTLS() && !c.TLS.Configured() {
		errs = append(errs, &FieldError{Key: "workerPortTls", Value: c.WorkerPortTLS, Reason: "an HTTPS listener (tlsEnabled) needs tlsCertificateFilePath and tlsKeyFilePath"})
	}
	if c.Authz.Enabled && !c.Authn.Enabled {
		errs = append(errs, &FieldError{Key: "authorizationEnabled", Value: true,
			Reason: "needs authenticationEnabled=true (without authentication every client is anonymous)"})
	}
	return errors.Join(errs...)
}
