package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// maxKeyBytes bounds key material and files read through ReadValue (htpasswd files, keys).
const maxKeyBytes = 4 << 20

// ReadValue resolves a key or file setting in the forms Pulsar accepts:
//
//	data:;base64,<base64>   data:,<text>      (RFC 2397 data URL)
//	file:///path            file:path
//	env:NAME                (the variable's value, itself in any of these forms but env:)
//	<anything else>         a path when allowPath and the file exists, else base64
//
// Pulsar's tokenSecretKey/tokenPublicKey treat a bare value as base64; basicAuthConf also
// accepts a bare path.
func ReadValue(v string, allowPath bool) ([]byte, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return nil, errors.New("empty value")
	case strings.HasPrefix(v, "data:"):
		return decodeDataURL(v)
	case strings.HasPrefix(v, "file:"):
		p := strings.TrimPrefix(v, "file:")
		if u, err := url.Parse(v); err == nil && u.Path != "" {
			p = u.Path
		}
		return readFileLimited(p)
	case strings.HasPrefix(v, "env:"):
		name := strings.TrimPrefix(v, "env:")
		val, ok := os.LookupEnv(name)
		if !ok || val == "" {
			return nil, fmt.Errorf("environment variable %s is not set", name)
		}
		if strings.HasPrefix(val, "env:") {
			return nil, fmt.Errorf("environment variable %s refers to another variable", name)
		}
		return ReadValue(val, allowPath)
	}
	if allowPath {
		if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
			return readFileLimited(v)
		}
	}
	b, err := decodeBase64(v)
	if err != nil {
		return nil, fmt.Errorf("not base64, data:, file: or env: (%w)", err)
	}
	return b, nil
}

func readFileLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() > maxKeyBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxKeyBytes)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// decodeDataURL decodes "data:[<mediatype>][;base64],<data>".
func decodeDataURL(v string) ([]byte, error) {
	meta, data, ok := strings.Cut(strings.TrimPrefix(v, "data:"), ",")
	if !ok {
		return nil, errors.New("data: URL without a comma")
	}
	if strings.HasSuffix(meta, ";base64") {
		return decodeBase64(data)
	}
	s, err := url.PathUnescape(data)
	if err != nil {
		return nil, fmt.Errorf("data: URL: %w", err)
	}
	return []byte(s), nil
}

// decodeBase64 accepts standard and URL alphabets, padded or not (keys are written by many
// tools).
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("invalid base64")
}

// ParsePublicKey reads a public key from DER (X.509 SubjectPublicKeyInfo, what `pulsar
// tokens create-key-pair` writes) or PEM (PUBLIC KEY, RSA PUBLIC KEY or CERTIFICATE).
func ParsePublicKey(b []byte) (any, error) {
	if blk, _ := pem.Decode(b); blk != nil {
		switch blk.Type {
		case "RSA PUBLIC KEY":
			return x509.ParsePKCS1PublicKey(blk.Bytes)
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(blk.Bytes)
			if err != nil {
				return nil, err
			}
			return checkPublicKey(c.PublicKey)
		}
		b = blk.Bytes
	}
	k, err := x509.ParsePKIXPublicKey(b)
	if err != nil {
		return nil, fmt.Errorf("not a DER or PEM public key: %w", err)
	}
	return checkPublicKey(k)
}

func checkPublicKey(k any) (any, error) {
	switch k := k.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("RSA key of %d bits: at least 2048 are required", k.N.BitLen())
		}
		return k, nil
	case *ecdsa.PublicKey, ed25519.PublicKey:
		return k, nil
	}
	return nil, fmt.Errorf("unsupported public key type %T", k)
}

// ParsePrivateKey reads a private key from DER or PEM (PKCS#8, PKCS#1 RSA, SEC 1 EC).
func ParsePrivateKey(b []byte) (any, error) {
	if blk, _ := pem.Decode(b); blk != nil {
		b = blk.Bytes
	}
	if k, err := x509.ParsePKCS8PrivateKey(b); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(b); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(b); err == nil {
		return k, nil
	}
	return nil, errors.New("not a DER or PEM private key (PKCS#8, PKCS#1 or SEC 1)")
}
