package cli

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/magnetar-io/magnetar/internal/auth"
)

// tokensCmd is `magnetar tokens`, pulsar tokens' verbs and flags: keys and JWTs for the token
// authentication provider (tokenSecretKey / tokenPublicKey).
func (a *app) tokensCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tokens",
		Short: "Create keys and tokens for token authentication (pulsar tokens)",
		Long: "Keys are written in Pulsar's formats: a raw HMAC secret (base64 with --base64), DER\n" +
			"X.509 public and PKCS#8 private keys. Point tokenSecretKey or tokenPublicKey at them\n" +
			"with file:///path.",
	}
	cmd.AddCommand(a.tokensSecretKeyCmd(), a.tokensKeyPairCmd(), a.tokensCreateCmd(), a.tokensShowCmd(), a.tokensValidateCmd())
	return cmd
}

func (a *app) tokensSecretKeyCmd() *cobra.Command {
	var alg, out string
	var b64 bool
	cmd := &cobra.Command{
		Use: "create-secret-key", Short: "Create an HMAC secret key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := auth.NewSecretKey(alg)
			if err != nil {
				return usageError(err)
			}
			if b64 {
				key = []byte(base64.StdEncoding.EncodeToString(key))
			}
			return writeOut(cmd, out, key)
		},
	}
	cmd.Flags().StringVarP(&alg, "signature-algorithm", "a", "HS256", "HS256, HS384 or HS512")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write the key to (default: standard output)")
	cmd.Flags().BoolVarP(&b64, "base64", "b", false, "write the key in base64")
	return cmd
}

func (a *app) tokensKeyPairCmd() *cobra.Command {
	var alg, priv, pub string
	cmd := &cobra.Command{
		Use: "create-key-pair", Short: "Create a public/private key pair", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if priv == "" || pub == "" {
				return usageError(errors.New("--output-private-key and --output-public-key are required"))
			}
			pubDER, privDER, err := auth.NewKeyPair(alg)
			if err != nil {
				return usageError(err)
			}
			if err := os.WriteFile(priv, privDER, 0o600); err != nil {
				return err
			}
			return os.WriteFile(pub, pubDER, 0o644)
		},
	}
	cmd.Flags().StringVarP(&alg, "signature-algorithm", "a", "RS256", "RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 or ES512")
	cmd.Flags().StringVar(&priv, "output-private-key", "", "file for the private key (DER PKCS#8)")
	cmd.Flags().StringVar(&pub, "output-public-key", "", "file for the public key (DER X.509)")
	return cmd
}

func (a *app) tokensCreateCmd() *cobra.Command {
	var alg, subject, expiry, secret, private string
	var headers []string
	cmd := &cobra.Command{
		Use: "create", Short: "Create a token", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if subject == "" {
				return usageError(errors.New("--subject is required"))
			}
			if (secret == "") == (private == "") {
				return usageError(errors.New("give exactly one of --secret-key and --private-key"))
			}
			var key any
			if secret != "" {
				b, err := auth.ReadValue(keyArg(secret), true)
				if err != nil {
					return usageError(fmt.Errorf("--secret-key: %w", err))
				}
				key = b
			} else {
				b, err := auth.ReadValue(keyArg(private), true)
				if err != nil {
					return usageError(fmt.Errorf("--private-key: %w", err))
				}
				if key, err = auth.ParsePrivateKey(b); err != nil {
					return usageError(fmt.Errorf("--private-key: %w", err))
				}
			}
			spec := auth.TokenSpec{Subject: subject, Headers: map[string]any{}}
			if expiry != "" {
				d, err := parseRelativeTime(expiry)
				if err != nil {
					return usageError(fmt.Errorf("--expiry-time: %w", err))
				}
				spec.Expiry = d
			}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, "=")
				if !ok || k == "" {
					return usageError(fmt.Errorf("--headers %q: want key=value", h))
				}
				spec.Headers[k] = v
			}
			tok, err := auth.CreateToken(key, alg, spec)
			if err != nil {
				return usageError(err)
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), tok)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&alg, "signature-algorithm", "a", "", "algorithm (default: HS256 for a secret, the key's for a private key)")
	f.StringVarP(&subject, "subject", "s", "", "the token's subject: the role it authenticates as")
	f.StringVarP(&expiry, "expiry-time", "e", "", "lifetime, e.g. 30s, 10m, 1h, 2d, 1w, 1y (default: never expires)")
	f.StringVar(&secret, "secret-key", "", "secret key: file:///path, data:;base64,..., a path, or base64")
	f.StringVar(&private, "private-key", "", "private key: file:///path, data:;base64,..., a path, or base64 (DER or PEM)")
	f.StringArrayVar(&headers, "headers", nil, "extra header key=value (repeatable)")
	return cmd
}

// tokenInput reads the token from an argument, --token-file or standard input.
func tokenInput(cmd *cobra.Command, args []string, file string, stdin bool) (string, error) {
	switch {
	case len(args) == 1:
		return args[0], nil
	case file != "":
		b, err := os.ReadFile(file)
		return strings.TrimSpace(string(b)), err
	case stdin:
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), 1<<20))
		return strings.TrimSpace(string(b)), err
	}
	return "", usageError(errors.New("give the token as an argument, with --token-file or with --stdin"))
}

func (a *app) tokensShowCmd() *cobra.Command {
	var file string
	var stdin bool
	cmd := &cobra.Command{
		Use: "show [token]", Short: "Show a token's header and claims (without verifying it)", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := tokenInput(cmd, args, file, stdin)
			if err != nil {
				return err
			}
			h, c, err := auth.ShowToken(tok)
			if err != nil {
				return usageError(err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n---\n%s\n", h, c)
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "token-file", "f", "", "read the token from this file")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "read the token from standard input")
	return cmd
}

func (a *app) tokensValidateCmd() *cobra.Command {
	var file, secret, public string
	var stdin bool
	cmd := &cobra.Command{
		Use: "validate [token]", Short: "Check a token's signature and expiry as a broker would", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tok, err := tokenInput(cmd, args, file, stdin)
			if err != nil {
				return err
			}
			if (secret == "") == (public == "") {
				return usageError(errors.New("give exactly one of --secret-key and --public-key"))
			}
			id, err := auth.ValidateToken(tok, keySetting(secret), keySetting(public), nil)
			if err != nil {
				return err
			}
			exp := "never"
			if !id.Expires.IsZero() {
				exp = id.Expires.UTC().Format(time.RFC3339)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "valid: role %s, expires %s\n", id.Role, exp)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVarP(&file, "token-file", "f", "", "read the token from this file")
	f.BoolVarP(&stdin, "stdin", "i", false, "read the token from standard input")
	f.StringVar(&secret, "secret-key", "", "secret key (the forms of tokenSecretKey, or a path)")
	f.StringVar(&public, "public-key", "", "public key (the forms of tokenPublicKey, or a path)")
	return cmd
}

// keyArg lets a plain path stand for file:path, as Pulsar's tools accept.
func keyArg(v string) string {
	if st, err := os.Stat(v); err == nil && st.Mode().IsRegular() {
		return "file:" + v
	}
	return v
}

// keySetting is keyArg for a setting that may be empty.
func keySetting(v string) string {
	if v == "" {
		return ""
	}
	return keyArg(v)
}

func writeOut(cmd *cobra.Command, path string, b []byte) error {
	if path == "" {
		_, err := cmd.OutOrStdout().Write(b)
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// parseRelativeTime reads Pulsar's relative times: a number and one of s, m, h, d, w, y
// (Go durations like 90m or 1h30m work too).
func parseRelativeTime(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	if len(s) < 2 {
		return 0, fmt.Errorf("%q: want a number and a unit (s, m, h, d, w, y)", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	unit := map[byte]time.Duration{'s': time.Second, 'm': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour,
		'w': 7 * 24 * time.Hour, 'y': 365 * 24 * time.Hour}[s[len(s)-1]]
	if err != nil || n <= 0 || unit == 0 || n > int64((1<<63-1)/unit) {
		return 0, fmt.Errorf("%q: want a positive number and a unit (s, m, h, d, w, y)", s)
	}
	return time.Duration(n) * unit, nil
}
