package connector

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Config is a connector's configs map (SourceConfig.configs / SinkConfig.configs) with typed
// reads. Pulsar's connector docs give values both as JSON numbers and as strings
// ("database.port": "3306"), so numbers and booleans accept either. A read of a key with a
// value of the wrong kind records an error naming the key; Err returns them all, so a
// connector checks its whole configuration and reports every bad key at once.
type Config struct {
	m       map[string]any
	secrets map[string]any
	errs    *[]string
	prefix  string // prepended to key names in errors (Sub)
}

// NewConfig wraps m (nil: empty). Secrets are Pulsar's secrets map: a config key that is
// absent from m is read from the secret of the same name (an environment variable name, or
// {"env": NAME} or {"path": FILE}).
func NewConfig(m map[string]any, secrets map[string]any) Config {
	if m == nil {
		m = map[string]any{}
	}
	return Config{m: m, secrets: secrets, errs: new([]string)}
}

func (c Config) bad(key, format string, args ...any) {
	*c.errs = append(*c.errs, fmt.Sprintf("%s%s: %s", c.prefix, key, fmt.Sprintf(format, args...)))
}

// Err returns the errors of every read so far (nil when all were good).
func (c Config) Err() error {
	if c.errs == nil || len(*c.errs) == 0 {
		return nil
	}
	return errors.New("configs: " + strings.Join(*c.errs, "; "))
}

// Has reports whether key is set.
func (c Config) Has(key string) bool {
	_, ok := c.lookup(key)
	return ok
}

func (c Config) lookup(key string) (any, bool) {
	if v, ok := c.m[key]; ok && v != nil {
		return v, true
	}
	s, ok := c.secrets[key]
	if !ok {
		return nil, false
	}
	switch s := s.(type) {
	case string:
		if v, ok := os.LookupEnv(s); ok {
			return v, true
		}
	case map[string]any:
		if env, ok := s["env"].(string); ok {
			if v, ok := os.LookupEnv(env); ok {
				return v, true
			}
		}
		if path, ok := s["path"].(string); ok {
			if b, err := os.ReadFile(path); err == nil {
				return strings.TrimRight(string(b), "\r\n"), true
			}
		}
	}
	return nil, false
}

// String reads a string (numbers and booleans are formatted).
func (c Config) String(key, def string) string {
	v, ok := c.lookup(key)
	if !ok {
		return def
	}
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	}
	c.bad(key, "want a string, got %T", v)
	return def
}

// Required reads a string that must be set and non-empty.
func (c Config) Required(key string) string {
	s := c.String(key, "")
	if s == "" {
		c.bad(key, "required")
	}
	return s
}

// Int reads an integer.
func (c Config) Int(key string, def int64) int64 {
	v, ok := c.lookup(key)
	if !ok {
		return def
	}
	switch v := v.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case int: // configs built in Go or decoded from YAML rather than JSON
		return int64(v)
	case int64:
		return v
	case string:
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			return n
		}
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
	}
	c.bad(key, "want an integer, got %v", v)
	return def
}

// IntRange reads an integer that must lie within [lo, hi].
func (c Config) IntRange(key string, def, lo, hi int64) int64 {
	n := c.Int(key, def)
	if n < lo || n > hi {
		c.bad(key, "%d is not between %d and %d", n, lo, hi)
		return def
	}
	return n
}

// Bool reads a boolean.
func (c Config) Bool(key string, def bool) bool {
	v, ok := c.lookup(key)
	if !ok {
		return def
	}
	switch v := v.(type) {
	case bool:
		return v
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(v)); err == nil {
			return b
		}
	}
	c.bad(key, "want true or false, got %v", v)
	return def
}

// Millis reads a duration given in milliseconds.
func (c Config) Millis(key string, def time.Duration) time.Duration {
	n := c.Int(key, def.Milliseconds())
	if n < 0 {
		c.bad(key, "%d is negative", n)
		return def
	}
	return time.Duration(n) * time.Millisecond
}

// List reads a comma-separated list (or a JSON array of strings), trimmed, empty items
// dropped.
func (c Config) List(key string) []string {
	v, ok := c.lookup(key)
	if !ok {
		return nil
	}
	var items []string
	switch v := v.(type) {
	case string:
		items = strings.Split(v, ",")
	case []any:
		for _, x := range v {
			s, ok := x.(string)
			if !ok {
				c.bad(key, "want strings, got %T", x)
				return nil
			}
			items = append(items, s)
		}
	default:
		c.bad(key, "want a comma-separated list, got %T", v)
		return nil
	}
	out := items[:0]
	for _, s := range items {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// OneOf reads a string that must be one of choices (compared case-insensitively; the
// choice's spelling is returned).
func (c Config) OneOf(key, def string, choices ...string) string {
	s := c.String(key, def)
	for _, ch := range choices {
		if strings.EqualFold(s, ch) {
			return ch
		}
	}
	c.bad(key, "%q is not one of %s", s, strings.Join(choices, ", "))
	return def
}

// Map reads a JSON object (or a JSON document in a string).
func (c Config) Map(key string) map[string]any {
	v, ok := c.lookup(key)
	if !ok {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		return v
	case string:
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err == nil {
			return m
		}
	}
	c.bad(key, "want a JSON object, got %v", v)
	return nil
}

// WithPrefix returns the keys that start with prefix, the prefix cut off, as strings
// (e.g. Kafka client properties under "consumerConfigProperties.").
func (c Config) WithPrefix(prefix string) map[string]string {
	out := map[string]string{}
	keys := make([]string, 0, len(c.m))
	for k := range c.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			out[rest] = c.String(k, "")
		}
	}
	return out
}

// Sub is the JSON object under key (Pulsar's nested maps such as a Kafka connector's
// consumerConfigProperties; also accepted flat, as key.name entries) as a Config whose bad
// reads are reported with c's, named key.name.
func (c Config) Sub(key string) Config {
	m := map[string]any{}
	for k, v := range c.Map(key) {
		m[k] = v
	}
	for k, v := range c.WithPrefix(key + ".") {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	return Config{m: m, errs: c.errs, prefix: c.prefix + key + "."}
}

// Defaults is c with defaults' values for the keys c does not set; its reads report to c's
// errors.
func (c Config) Defaults(defaults map[string]any) Config {
	m := make(map[string]any, len(c.m)+len(defaults))
	for k, v := range c.m {
		m[k] = v
	}
	for k, v := range defaults {
		if !c.Has(k) {
			m[k] = v
		}
	}
	return Config{m: m, secrets: c.secrets, errs: c.errs, prefix: c.prefix}
}

// Keys are the keys set, sorted.
func (c Config) Keys() []string {
	keys := make([]string, 0, len(c.m))
	for k, v := range c.m {
		if v != nil {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Raw is the configs map itself.
func (c Config) Raw() map[string]any { return c.m }
