package pf

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ErrNoState is returned by state reads of a key that was never written.
var ErrNoState = errors.New("pf: no such state key")

// ErrStateUnavailable is returned when the instance has no state service
// (stateStorageServiceUrl is empty).
var ErrStateUnavailable = errors.New("pf: state is not available (the worker gave no stateStorageServiceUrl)")

// maxStateValueBytes bounds a state value read back from the worker.
const maxStateValueBytes = 1 << 20

// stateClient talks to the worker's state service:
//
//	GET    <base>/<tenant>/<namespace>/<name>/<key>          value (X-State-Kind: bytes|counter)
//	PUT    <base>/<tenant>/<namespace>/<name>/<key>          body is the value
//	DELETE <base>/<tenant>/<namespace>/<name>/<key>
//	POST   <base>/<tenant>/<namespace>/<name>/<key>?incr=N   new counter value, decimal
//
// Counters are 8-byte big-endian integers, as Pulsar's state store keeps them.
type stateClient struct {
	base   string
	token  string
	prefix string
	http   *http.Client
}

func newStateClient(c *Conf) *stateClient {
	if c.StateStorageServiceURL == "" {
		return nil
	}
	return &stateClient{
		base: c.StateStorageServiceURL, token: c.StateToken,
		prefix: "/" + url.PathEscape(c.Tenant) + "/" + url.PathEscape(c.NameSpace) + "/" + url.PathEscape(c.Name) + "/",
		http:   &http.Client{Timeout: 30 * time.Second},
	}
}

func (s *stateClient) do(ctx context.Context, method, key, query string, body []byte) ([]byte, http.Header, error) {
	if s == nil {
		return nil, nil, ErrStateUnavailable
	}
	if key == "" {
		return nil, nil, errors.New("pf: state key is empty")
	}
	u := s.base + s.prefix + url.PathEscape(key) + query
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("pf: state %s %q: %w", method, key, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxStateValueBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("pf: state %s %q: %w", method, key, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil, nil, ErrNoState
	case resp.StatusCode >= 300:
		return nil, nil, fmt.Errorf("pf: state %s %q: %s: %s", method, key, resp.Status, bytes.TrimSpace(b))
	}
	return b, resp.Header, nil
}

func (s *stateClient) get(ctx context.Context, key string) ([]byte, error) {
	b, _, err := s.do(ctx, http.MethodGet, key, "", nil)
	return b, err
}

func (s *stateClient) put(ctx context.Context, key string, value []byte) error {
	_, _, err := s.do(ctx, http.MethodPut, key, "", value)
	return err
}

func (s *stateClient) del(ctx context.Context, key string) error {
	_, _, err := s.do(ctx, http.MethodDelete, key, "", nil)
	return err
}

func (s *stateClient) incr(ctx context.Context, key string, by int64) (int64, error) {
	b, _, err := s.do(ctx, http.MethodPost, key, "?incr="+strconv.FormatInt(by, 10), nil)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
}

func (s *stateClient) counter(ctx context.Context, key string) (int64, error) {
	b, err := s.get(ctx, key)
	if err != nil {
		return 0, err
	}
	if len(b) != 8 {
		return 0, fmt.Errorf("pf: state key %q holds %d bytes, not a counter", key, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}
