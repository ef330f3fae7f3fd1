package testenv

import (
	"path/filepath"
	"strconv"
	"testing"
)

// Azurite, the Azure Storage emulator, from npm.
const azuriteVersion = "3.37.0"

// Azurite's well-known development account (public, the same in every installation).
const (
	AzuriteAccount = "devstoreaccount1"
	AzuriteKey     = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)

// AzuriteServer is a running Azurite blob service.
type AzuriteServer struct {
	// Endpoint is the account's blob service URL: http://127.0.0.1:port/devstoreaccount1
	Endpoint string
	Account  string
	Key      string
	Proc     *Process
}

// StartAzurite installs Azurite (once) and starts its blob service on a free loopback port.
func StartAzurite(t testing.TB) *AzuriteServer {
	t.Helper()
	bin := filepath.Join(NpmPackage(t, "azurite", "azurite@"+azuriteVersion), "node_modules", ".bin", "azurite-blob")
	dir := filepath.Join(t.TempDir(), "azurite")
	mkdir(t, dir)
	port := FreePort(t)
	p := Start(t, bin, []string{"--blobHost", "127.0.0.1", "--blobPort", strconv.Itoa(port), "--location", dir,
		"--silent", "--skipApiVersionCheck", "--loose", "--disableProductStyleUrl"}, nil, "")
	WaitTCP(t, p, "azurite", hostPort(port))
	return &AzuriteServer{Endpoint: "http://" + hostPort(port) + "/" + AzuriteAccount, Account: AzuriteAccount, Key: AzuriteKey, Proc: p}
}
