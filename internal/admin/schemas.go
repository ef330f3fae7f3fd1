package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/magnetar-io/magnetar/internal/config"
	"github.com/magnetar-io/magnetar/internal/resources"
	"github.com/magnetar-io/magnetar/internal/schema"
)

// Schema endpoints (/admin/v2/schemas/{tenant}/{namespace}/{topic}/...) over the schema
// registry, with the JSON shapes pulsaradmin decodes (GetSchemaResponse,
// GetAllSchemasResponse, PostSchemaPayload, IsCompatibility), plus the namespace's schema
// policies (/admin/v2/namespaces/{t}/{ns}/schemaCompatibilityStrategy, ...).

// getSchemaResponse is Pulsar's GetSchemaResponse.
type getSchemaResponse struct {
	Version    int64             `json:"version"`
	Type       string            `json:"type"`
	Timestamp  int64             `json:"timestamp"`
	Data       string            `json:"data"`
	Properties map[string]string `json:"properties"`
}

// postSchemaPayload is Pulsar's PostSchemaPayload.
type postSchemaPayload struct {
	Type       string            `json:"type"`
	Schema     string            `json:"schema"`
	Properties map[string]string `json:"properties"`
}

type versionResponse struct {
	Version int64 `json:"version"`
}

type compatibilityResponse struct {
	Compatibility bool   `json:"compatibility"`
	Strategy      string `json:"schemaCompatibilityStrategy"`
}

func (s *server) registerSchemas(mux *http.ServeMux) {
	if s.schemas == nil {
		s.schemas = schema.New(s.res.Store(), config.DefaultSchemaConfig(), s.log)
	}
	base := "/admin/v2/schemas/{tenant}/{namespace}/{topic}"
	mux.HandleFunc("GET "+base+"/schema", s.handle(s.getSchema))
	mux.HandleFunc("GET "+base+"/schema/{version}", s.handle(s.getSchema))
	mux.HandleFunc("GET "+base+"/schemas", s.handle(s.getAllSchemas))
	mux.HandleFunc("POST "+base+"/schema", s.handle(s.postSchema))
	mux.HandleFunc("DELETE "+base+"/schema", s.handle(s.deleteSchema))
	mux.HandleFunc("POST "+base+"/version", s.handle(s.schemaVersion))
	mux.HandleFunc("POST "+base+"/compatibility", s.handle(s.schemaCompatibility))

	ns := "/admin/v2/namespaces/{tenant}/{namespace}/"
	for _, name := range []string{"schemaCompatibilityStrategy", "schemaAutoUpdateCompatibilityStrategy"} {
		auto := name == "schemaAutoUpdateCompatibilityStrategy"
		mux.HandleFunc("GET "+ns+name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			p, err := s.namespacePolicies(ctx, r)
			if err != nil {
				return nil, err
			}
			if auto {
				return jsonString(cmpOr(p.SchemaAutoUpdateCompat, "Full")), nil
			}
			return jsonString(cmpOr(p.SchemaCompatibility, string(schema.Undefined))), nil
		}))
		mux.HandleFunc("PUT "+ns+name, s.handle(func(ctx context.Context, r *http.Request) (any, error) {
			text, err := stringBody(r)
			if err != nil {
				return nil, err
			}
			if auto {
				if !strings.EqualFold(text, "AutoUpdateDisabled") {
					if _, err := schema.ParseStrategy(text); err != nil {
						return nil, err
					}
				}
				return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { p.SchemaAutoUpdateCompat = text; return nil })
			}
			st, err := schema.ParseStrategy(text)
			if err != nil {
				return nil, err
			}
			return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { p.SchemaCompatibility = string(st); return nil })
		}))
	}
	mux.HandleFunc("GET "+ns+"isAllowAutoUpdateSchema", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		p, err := s.namespacePolicies(ctx, r)
		if err != nil {
			return nil, err
		}
		if p.IsAllowAutoUpdateSchema == nil {
			return true, nil
		}
		return *p.IsAllowAutoUpdateSchema, nil
	}))
	mux.HandleFunc("POST "+ns+"isAllowAutoUpdateSchema", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		var b *bool
		if err := decodeBody(r, &b); err != nil {
			return nil, err
		}
		return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { p.IsAllowAutoUpdateSchema = b; return nil })
	}))
	mux.HandleFunc("GET "+ns+"schemaValidationEnforced", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		p, err := s.namespacePolicies(ctx, r)
		if err != nil {
			return nil, err
		}
		return p.SchemaValidationEnforced, nil
	}))
	mux.HandleFunc("POST "+ns+"schemaValidationEnforced", s.handle(func(ctx context.Context, r *http.Request) (any, error) {
		var b bool
		if err := decodeBody(r, &b); err != nil {
			return nil, err
		}
		return nil, s.updatePolicies(ctx, r, func(p *resources.Policies) error { p.SchemaValidationEnforced = b; return nil })
	}))
}

// jsonString is a JSON string body without the encoder's trailing newline: pulsaradmin
// reads strategy names raw, strips the quotes and parses the rest exactly.
type jsonString string

func (j jsonString) writeTo(w http.ResponseWriter) {
	b, _ := json.Marshal(string(j))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// stringBody reads a strategy name sent as a JSON string ("FULL", what pulsaradmin sends)
// or as bare text (FULL, what curl users type).
func stringBody(r *http.Request) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, 1024))
	if err != nil {
		return "", fmt.Errorf("%w: reading body: %v", ErrBadRequest, err)
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return strings.TrimSpace(s), nil
	}
	return strings.TrimSpace(string(b)), nil
}

// schemaIDOf checks the namespace and names the topic's schema; a partition's name maps
// to its partitioned topic, whose history partitions share.
func (s *server) schemaIDOf(ctx context.Context, r *http.Request) (schema.ID, error) {
	tenant, ns, topic := r.PathValue("tenant"), r.PathValue("namespace"), r.PathValue("topic")
	if err := s.checkNamespace(ctx, tenant, ns); err != nil {
		return schema.ID{}, err
	}
	if i := strings.LastIndex(topic, "-partition-"); i > 0 {
		if n, err := strconv.Atoi(topic[i+len("-partition-"):]); err == nil && n >= 0 {
			topic = topic[:i]
		}
	}
	return schema.ID{Tenant: tenant, Namespace: ns, Topic: topic}, nil
}

func toResponse(e schema.Entry) getSchemaResponse {
	props := e.Schema.Properties
	if props == nil {
		props = map[string]string{}
	}
	data := string(e.Schema.Data)
	if e.Schema.Type == schema.KeyValue {
		// Pulsar shows KEY_VALUE data as {"key": ..., "value": ...}.
		if j, err := schema.KeyValueJSON(e.Schema); err == nil {
			data = j
		}
	}
	return getSchemaResponse{Version: e.Version, Type: e.Schema.Type.String(), Timestamp: e.Timestamp,
		Data: data, Properties: props}
}

func (s *server) getSchema(ctx context.Context, r *http.Request) (any, error) {
	id, err := s.schemaIDOf(ctx, r)
	if err != nil {
		return nil, err
	}
	var e schema.Entry
	if vs := r.PathValue("version"); vs != "" {
		v, perr := strconv.ParseInt(vs, 10, 64)
		if perr != nil {
			return nil, fmt.Errorf("%w: schema version %q is not a number", ErrBadRequest, vs)
		}
		e, err = s.schemas.Get(ctx, id, v)
	} else {
		e, err = s.schemas.Latest(ctx, id)
	}
	if err != nil {
		return nil, err
	}
	return toResponse(e), nil
}

func (s *server) getAllSchemas(ctx context.Context, r *http.Request) (any, error) {
	id, err := s.schemaIDOf(ctx, r)
	if err != nil {
		return nil, err
	}
	all, err := s.schemas.All(ctx, id)
	if err != nil {
		return nil, err
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%w: topic %s has no schema", schema.ErrNotFound, id)
	}
	out := struct {
		Schemas []getSchemaResponse `json:"getSchemaResponses"`
	}{Schemas: make([]getSchemaResponse, len(all))}
	for i, e := range all {
		out.Schemas[i] = toResponse(e)
	}
	return out, nil
}

// payloadOf reads a PostSchemaPayload body.
func payloadOf(r *http.Request) (schema.Schema, error) {
	var p postSchemaPayload
	if err := decodeBody(r, &p); err != nil {
		return schema.Schema{}, err
	}
	if p.Type == "" {
		return schema.Schema{}, fmt.Errorf("%w: schema payload needs a type", ErrBadRequest)
	}
	t, err := schema.ParseType(p.Type)
	if err != nil {
		return schema.Schema{}, err
	}
	data := []byte(p.Schema)
	if t == schema.KeyValue {
		// Uploaded as {"key": ..., "value": ...}, stored in the binary KEY_VALUE layout.
		if data, err = schema.KeyValueFromJSON(p.Schema); err != nil {
			return schema.Schema{}, err
		}
	}
	return schema.Schema{Type: t, Data: data, Properties: p.Properties}, nil
}

func (s *server) postSchema(ctx context.Context, r *http.Request) (any, error) {
	return s.withPayload(ctx, r, s.schemas.Put)
}

// withPayload runs op on the request's topic and posted schema and answers its version.
func (s *server) withPayload(ctx context.Context, r *http.Request, op func(context.Context, schema.ID, schema.Schema) (int64, error)) (any, error) {
	id, err := s.schemaIDOf(ctx, r)
	if err != nil {
		return nil, err
	}
	sc, err := payloadOf(r)
	if err != nil {
		return nil, err
	}
	v, err := op(ctx, id, sc)
	if err != nil {
		return nil, err
	}
	return versionResponse{Version: v}, nil
}

func (s *server) deleteSchema(ctx context.Context, r *http.Request) (any, error) {
	id, err := s.schemaIDOf(ctx, r)
	if err != nil {
		return nil, err
	}
	force, _ := strconv.ParseBool(r.URL.Query().Get("force"))
	v, err := s.schemas.Delete(ctx, id, force)
	if err != nil {
		return nil, err
	}
	return versionResponse{Version: v}, nil
}

func (s *server) schemaVersion(ctx context.Context, r *http.Request) (any, error) {
	return s.withPayload(ctx, r, s.schemas.VersionOf)
}

// schemaCompatibility answers whether the payload could be added under the namespace's
// strategy; an incompatible schema is a 200 with compatibility false, as in Pulsar.
func (s *server) schemaCompatibility(ctx context.Context, r *http.Request) (any, error) {
	id, err := s.schemaIDOf(ctx, r)
	if err != nil {
		return nil, err
	}
	sc, err := payloadOf(r)
	if err != nil {
		return nil, err
	}
	st, err := s.schemas.Check(ctx, id, sc, schema.Undefined)
	if errors.Is(err, schema.ErrIncompatible) {
		return compatibilityResponse{Compatibility: false, Strategy: string(st)}, nil
	}
	if err != nil {
		return nil, err
	}
	return compatibilityResponse{Compatibility: true, Strategy: string(st)}, nil
}
