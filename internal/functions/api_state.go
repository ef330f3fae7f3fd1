package functions

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/apache/pulsar-client-go/pulsar"
)

// FunctionState is a state key as the admin API shows it (pulsaradmin's FunctionState).
type FunctionState struct {
	Key         string `json:"key"`
	StringValue string `json:"stringValue,omitempty"`
	ByteValue   []byte `json:"byteValue,omitempty"`
	NumValue    int64  `json:"numberValue,omitempty"`
	Version     int64  `json:"version,omitempty"`
}

func (w *Worker) getState(r *http.Request, key string) (any, error) {
	fqfn := fqfnOf(r)
	if _, _, err := w.meta.get(r.Context(), fqfn); err != nil {
		return nil, err
	}
	v, err := w.state.get(r.Context(), fqfn, key)
	if err != nil {
		return nil, err
	}
	st := FunctionState{Key: key, Version: v.Version}
	switch {
	case v.Counter:
		st.NumValue = v.Number
	case utf8.Valid(v.Bytes):
		st.StringValue = string(v.Bytes)
	default:
		st.ByteValue = v.Bytes
	}
	return st, nil
}

// putState is POST .../state/{key} with a multipart "state" part holding FunctionState.
func (w *Worker) putState(r *http.Request, key string) (any, error) {
	fqfn := fqfnOf(r)
	if _, _, err := w.meta.get(r.Context(), fqfn); err != nil {
		return nil, err
	}
	r.Body = http.MaxBytesReader(nil, r.Body, int64(w.cfg.MaxStateValueBytes)*2+maxConfigBytes)
	if err := r.ParseMultipartForm(8 << 20); err != nil {
		return nil, badField("state", "want multipart/form-data with a state part: %v", err)
	}
	raw := r.FormValue("state")
	if raw == "" {
		if fh := r.MultipartForm.File["state"]; len(fh) > 0 {
			b, err := readPart(fh[0])
			if err != nil {
				return nil, err
			}
			raw = string(b)
		}
	}
	var st FunctionState
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return nil, badField("state", "not a FunctionState JSON document: %v", err)
	}
	if st.Key != "" && st.Key != key {
		return nil, badField("key", "%q does not match the path's %q", st.Key, key)
	}
	switch {
	case st.StringValue != "":
		return nil, w.state.put(r.Context(), fqfn, key, []byte(st.StringValue))
	case st.ByteValue != nil:
		return nil, w.state.put(r.Context(), fqfn, key, st.ByteValue)
	default:
		return nil, w.state.putCounter(r.Context(), fqfn, key, st.NumValue)
	}
}

func (w *Worker) deleteState(r *http.Request) (any, error) {
	return nil, w.state.delete(r.Context(), fqfnOf(r), r.PathValue("key"))
}

// instanceState is the state service instances call (stateStorageServiceUrl). It takes
// only this worker's instance token: state is the functions', not the world's.
func (w *Worker) instanceState(rw http.ResponseWriter, r *http.Request) {
	got := []byte(r.Header.Get("Authorization"))
	if subtle.ConstantTimeCompare(got, []byte("Bearer "+w.token)) != 1 {
		writeError(rw, statusError(http.StatusUnauthorized, "the state service is for this worker's function instances"))
		return
	}
	ctx := r.Context()
	fqfn := fqfnOf(r)
	key := r.PathValue("key")
	switch r.Method {
	case http.MethodGet:
		v, err := w.state.get(ctx, fqfn, key)
		if err != nil {
			writeError(rw, err)
			return
		}
		kind := "bytes"
		if v.Counter {
			kind = "counter"
		}
		rw.Header().Set("X-State-Kind", kind)
		_, _ = rw.Write(v.Bytes)
	case http.MethodPut:
		b, err := io.ReadAll(io.LimitReader(r.Body, int64(w.cfg.MaxStateValueBytes)+1))
		if err == nil {
			err = w.state.put(ctx, fqfn, key, b)
		}
		if err != nil {
			writeError(rw, err)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		if err := w.state.delete(ctx, fqfn, key); err != nil {
			writeError(rw, err)
			return
		}
		rw.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
		by, err := strconv.ParseInt(r.URL.Query().Get("incr"), 10, 64)
		if err != nil {
			writeError(rw, badField("incr", "not an integer"))
			return
		}
		n, err := w.state.incr(ctx, fqfn, key, by)
		if err != nil {
			writeError(rw, err)
			return
		}
		_, _ = fmt.Fprint(rw, n)
	}
}

// triggerTimeout bounds how long trigger waits for the function's output.
const triggerTimeout = 30 * time.Second

// trigger publishes a value to an input of the function and returns the first output that
// follows, as Pulsar's trigger does.
func (w *Worker) trigger(r *http.Request) (any, error) {
	ctx := r.Context()
	m, _, err := w.meta.get(ctx, fqfnOf(r))
	if err != nil {
		return nil, err
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxConfigBytes)
	if err := r.ParseMultipartForm(maxConfigBytes); err != nil {
		return nil, badField("data", "want multipart/form-data with data or dataStream: %v", err)
	}
	value := []byte(r.FormValue("data"))
	if fh := r.MultipartForm.File["dataStream"]; len(fh) > 0 {
		if value, err = readPart(fh[0]); err != nil {
			return nil, err
		}
	}
	topic := r.FormValue("topic")
	if topic == "" {
		ins := m.Config.inputTopics()
		if len(ins) != 1 {
			return nil, badField("topic", "the function has %d inputs: name the one to trigger", len(ins))
		}
		topic = ins[0]
	} else if _, ok := m.Config.InputSpecs[topic]; !ok {
		return nil, badField("topic", "%s is not an input of the function", topic)
	}
	opts, err := w.brokerClientOptions()
	if err != nil {
		return nil, err
	}
	opts.OperationTimeout = triggerTimeout
	client, err := pulsar.NewClient(opts)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	var reader pulsar.Reader
	if m.Config.Output != "" {
		if reader, err = client.CreateReader(pulsar.ReaderOptions{Topic: m.Config.Output, StartMessageID: pulsar.LatestMessageID()}); err != nil {
			return nil, err
		}
		defer reader.Close()
	}
	p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: value}); err != nil {
		return nil, err
	}
	if reader == nil {
		return rawBody{contentType: "application/json", b: []byte(`""`)}, nil
	}
	rctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	defer cancel()
	msg, err := reader.Next(rctx)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, statusError(http.StatusRequestTimeout, "no output from %s within %v", m.Config.FQFN, triggerTimeout)
		}
		return nil, err
	}
	b, _ := json.Marshal(string(msg.Payload()))
	return rawBody{contentType: "application/json", b: b}, nil
}

// brokerClientOptions is the worker's own Pulsar client towards the brokers (trigger): its
// brokerClient credentials and TLS trust, as its instances have.
func (w *Worker) brokerClientOptions() (pulsar.ClientOptions, error) {
	o := pulsar.ClientOptions{URL: w.opts.BrokerServiceURL, TLSTrustCertsFilePath: w.opts.InstanceTLSTrustCertsFile,
		TLSValidateHostname: w.opts.InstanceTLSVerifyHostname}
	if w.opts.InstanceAuthPlugin != "" {
		a, err := pulsar.NewAuthentication(w.opts.InstanceAuthPlugin, w.opts.InstanceAuthParams)
		if err != nil {
			return o, fmt.Errorf("functions: the worker's client authentication (brokerClientAuthenticationPlugin): %w", err)
		}
		o.Authentication = a
	}
	return o, nil
}
