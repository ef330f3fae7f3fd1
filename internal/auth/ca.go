package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// CA is a throwaway certificate authority for `magnetar dev-cluster --tls` and tests: it
// issues certificates whose common name is the role they authenticate as, for the hosts
// given. Never use it for anything real: its key sits in a file next to the certificates.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// CertFile is the PEM CA certificate (what tlsTrustCertsFilePath points to).
	CertFile string
	dir      string
}

// NewCA creates a CA valid for validity and writes ca.pem (and ca-key.pem) into dir.
func NewCA(dir, name string, validity time.Duration) (*CA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: name, Organization: []string{"Magnetar throwaway CA"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{cert: cert, key: key, CertFile: filepath.Join(dir, "ca.pem"), dir: dir}
	if err := writePEM(ca.CertFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return ca, writePEM(filepath.Join(dir, "ca-key.pem"), "PRIVATE KEY", kb)
}

// Issued is a certificate and key written by Issue.
type Issued struct {
	CertFile, KeyFile string
}

// IssueOptions describe a certificate.
type IssueOptions struct {
	// Name is the file name stem and, unless CommonName is set, the common name (the role
	// it authenticates as).
	Name       string
	CommonName string
	// Hosts are DNS names and IP addresses the certificate is valid for (servers).
	Hosts []string
	// Validity defaults to a day; NotBefore to an hour ago.
	Validity  time.Duration
	NotBefore time.Time
}

// Issue writes <name>.pem and <name>-key.pem, usable for both server and client auth.
func (ca *CA) Issue(o IssueOptions) (Issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Issued{}, err
	}
	cn := o.CommonName
	if cn == "" {
		cn = o.Name
	}
	if o.Validity == 0 {
		o.Validity = 24 * time.Hour
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: o.NotBefore, NotAfter: o.NotBefore.Add(o.Validity),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	for _, h := range o.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return Issued{}, err
	}
	out := Issued{CertFile: filepath.Join(ca.dir, o.Name+".pem"), KeyFile: filepath.Join(ca.dir, o.Name+"-key.pem")}
	if err := writePEM(out.CertFile, "CERTIFICATE", der); err != nil {
		return Issued{}, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return Issued{}, err
	}
	return out, writePEM(out.KeyFile, "PRIVATE KEY", kb)
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

// writePEM writes atomically (a reloading reader never sees half a file).
func writePEM(path, typ string, der []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
