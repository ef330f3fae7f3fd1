package config

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/pflag"
)

// Source says where the effective value of a key came from.
type Source string

// The sources, lowest precedence first.
const (
	FromDefault Source = "default"
	FromFile    Source = "file"
	FromEnv     Source = "env"
	FromFlag    Source = "flag"
)

// EnvPrefix starts every environment variable the binding reads (besides exact key names).
const EnvPrefix = "MAGNETAR_"

// Binding ties the fields of one or more config structs to flags, environment variables and
// config-file keys. Several structs may share a key (standalone's bookie and broker both have
// an advertised address); setting the key sets every field bound to it.
type Binding struct {
	keys    []string
	fields  map[string][]reflect.Value
	flags   map[string]*flagValue
	sources map[string]Source
	origins map[string]string // "config file F line N", "environment NAME", "flag --x"
	// defaults holds each field's value at Bind time, for blank values (set below).
	defaults map[string][]reflect.Value
}

// flagValue records what the command line said without touching the config struct, so that
// file and environment values can be applied first and the flag last.
type flagValue struct {
	name string // the flag's name (the key's kebab case unless a flag tag says otherwise)
	def  string
	typ  string
	raw  string
	set  bool
	kind reflect.Type
}

func (f *flagValue) String() string { return f.def }
func (f *flagValue) Type() string   { return f.typ }
func (f *flagValue) Set(s string) error {
	if _, err := parseValue(f.kind, s); err != nil {
		return err
	}
	f.raw, f.set = s, true
	return nil
}

// Bind registers a flag on fs for every tagged field of the given struct pointers and returns
// the binding to Load later. It fails on untagged leaf fields and unsupported field types,
// which are programming errors.
func Bind(fs *pflag.FlagSet, cfgs ...any) (*Binding, error) {
	b := &Binding{fields: map[string][]reflect.Value{}, flags: map[string]*flagValue{}, sources: map[string]Source{}, origins: map[string]string{}, defaults: map[string][]reflect.Value{}}
	for _, c := range cfgs {
		v := reflect.ValueOf(c)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return nil, fmt.Errorf("config: Bind wants a pointer to a struct, got %T", c)
		}
		if err := b.walk(fs, v.Elem()); err != nil {
			return nil, err
		}
	}
	return b, nil
}

func (b *Binding) walk(fs *pflag.FlagSet, v reflect.Value) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf, fv := t.Field(i), v.Field(i)
		if !sf.IsExported() {
			continue
		}
		key := sf.Tag.Get("key")
		if key == "" {
			if fv.Kind() == reflect.Struct && sf.Type != reflect.TypeFor[time.Duration]() {
				if err := b.walk(fs, fv); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("config: field %s.%s has no key tag", t.Name(), sf.Name)
		}
		if key == "-" {
			continue
		}
		if _, err := formatValue(fv); err != nil {
			return fmt.Errorf("config: field %s.%s: %w", t.Name(), sf.Name, err)
		}
		if _, seen := b.fields[key]; !seen {
			b.keys = append(b.keys, key)
			b.sources[key] = FromDefault
			name := sf.Tag.Get("flag")
			if name == "" {
				name = FlagName(key)
			}
			def, _ := formatValue(fv)
			fl := &flagValue{name: name, def: def, typ: typeName(sf.Type), kind: sf.Type}
			b.flags[key] = fl
			if fs != nil {
				fs.Var(fl, name, sf.Tag.Get("help")+" (key "+key+")")
				if sf.Type.Kind() == reflect.Bool {
					fs.Lookup(name).NoOptDefVal = "true" // --flag alone means true
				}
			}
		}
		b.fields[key] = append(b.fields[key], fv)
		b.defaults[key] = append(b.defaults[key], reflect.ValueOf(fv.Interface()))
	}
	return nil
}

// Keys lists the bound keys in declaration order.
func (b *Binding) Keys() []string { return b.keys }

// Source tells where the value of key came from after Load.
func (b *Binding) Source(key string) Source { return b.sources[key] }

// Changed lists "key=value (source)" for every key not at its default, sorted, for the
// startup log line that says which value won and from where.
func (b *Binding) Changed() []string {
	var out []string
	for _, k := range b.keys {
		if s := b.sources[k]; s != FromDefault {
			val, _ := formatValue(b.fields[k][0])
			out = append(out, fmt.Sprintf("%s=%s (%s)", k, val, s))
		}
	}
	sort.Strings(out)
	return out
}

func (b *Binding) set(key, raw string, src Source, origin string) error {
	if src != FromFlag && strings.TrimSpace(raw) == "" && len(b.fields[key]) > 0 && b.fields[key][0].Kind() != reflect.Slice {
		// A blank value means the default, as Pulsar's FieldParser leaves a field at its
		// default when its shipped .conf files only document a key (numIOThreads=,
		// brokerServicePortTls=). A blank environment override (PULSAR_PREFIX_key=) therefore
		// takes back a value the file set, as in Pulsar's docker images.
		for i, fv := range b.fields[key] {
			fv.Set(b.defaults[key][i])
		}
		b.sources[key] = FromDefault
		delete(b.origins, key)
		return nil
	}
	for _, fv := range b.fields[key] {
		val, err := parseValue(fv.Type(), raw)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", key, raw, err)
		}
		fv.Set(val)
	}
	b.sources[key] = src
	b.origins[key] = origin
	return nil
}

// Report is what Apply found besides the values it applied.
type Report struct {
	// NotApplicable lists, sorted, the keys of Pulsar and BookKeeper (pulsar_keys.txt)
	// that were set but that no Magnetar config binds: ZooKeeper and JVM settings, Java
	// class names, features Magnetar does in its own way. They are accepted so Pulsar's
	// files work as they are, and logged in one warning (cli/root.go).
	NotApplicable []string
	// Unknown lists keys that are neither Magnetar's nor Pulsar's (keys of other Pulsar
	// versions or plugins, or typos too far from any key to suggest one); logged too.
	Unknown []string
}

// PulsarEnvPrefix starts the environment variables Pulsar's docker images turn into config
// keys (PULSAR_PREFIX_maxMessageSize=...), besides the exact key names.
const PulsarEnvPrefix = "PULSAR_PREFIX_"

// Load is Apply without the report.
func Load(path string, environ []string, bs ...*Binding) error {
	_, err := Apply(path, environ, bs...)
	return err
}

// unboundValue is the last value an unbound key was given and where; parent is the
// top-level key of a nested YAML entry (Entry.Parent).
type unboundValue struct{ value, origin, parent string }

// Apply applies, in order, the config file at path (skipped when path is empty), the
// environment (a list of "NAME=value" as os.Environ returns) and the flags given on the
// command line, to every binding.
//
// The file may be a Pulsar or BookKeeper one as it is (standalone.conf, broker.conf,
// bookkeeper.conf, proxy.conf, client.conf): a key no binding knows is accepted and
// reported (Report) when it is one of theirs or unknown to both, and is an error only when
// it looks like a typo of a bound key (the error suggests that key) or turns on a
// protection this build lacks (securityGate). The environment sets a key by its MAGNETAR_
// name, PULSAR_PREFIX_key or the exact key, in that order of preference; PULSAR_PREFIX_key
// and the exact key also override an unbound key (Pulsar's apply-config-from-env.py does
// both). Every error found is returned, joined, each naming its file and line, variable or
// flag.
func Apply(path string, environ []string, bs ...*Binding) (*Report, error) {
	owner := func(key string) *Binding {
		for _, b := range bs {
			if _, ok := b.fields[key]; ok {
				return b
			}
		}
		return nil
	}
	unbound := map[string]unboundValue{}
	var errs []error
	if path != "" {
		entries, err := ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			origin := fmt.Sprintf("config file %s line %d", path, e.Line)
			if b := owner(e.Key); b != nil {
				if err := b.set(e.Key, e.Value, FromFile, origin); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", origin, err))
				}
				continue
			}
			if e.Parent != "" && owner(e.Parent) != nil {
				errs = append(errs, fmt.Errorf("%s: %s takes a value or a list of values, not a YAML mapping (found %s)", origin, e.Parent, e.Key))
				continue
			}
			unbound[e.Key] = unboundValue{e.Value, origin, e.Parent}
		}
	}
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for _, b := range bs {
		for _, key := range b.keys {
			for _, name := range []string{EnvName(key), PulsarEnvPrefix + key, key} {
				if v, ok := env[name]; ok {
					if err := b.set(key, v, FromEnv, "environment "+name); err != nil {
						errs = append(errs, fmt.Errorf("environment %s: %w", name, err))
					}
					break
				}
			}
		}
	}
	envUnbound(env, unbound, func(k string) bool { return owner(k) != nil })
	for _, b := range bs {
		for _, key := range b.keys {
			if fl := b.flags[key]; fl.set {
				if err := b.set(key, fl.raw, FromFlag, "flag --"+fl.name); err != nil {
					errs = append(errs, fmt.Errorf("flag --%s: %w", fl.name, err))
				}
			}
		}
	}
	var bound []string
	for _, b := range bs {
		bound = append(bound, b.keys...)
	}
	rep := &Report{}
	for key, u := range unbound {
		if err := checkSecurityGate(key, u.value); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", u.origin, err))
			continue
		}
		if IsPulsarKey(key) || (u.parent != "" && IsPulsarKey(u.parent)) {
			// functionRuntimeFactoryConfigs.logDirectory: a setting of a Java runtime.
			rep.NotApplicable = append(rep.NotApplicable, key)
			continue
		}
		if u.parent != "" { // a dotted name is no typo of a bound (flat) key
			rep.Unknown = append(rep.Unknown, key)
			continue
		}
		if s := suggest(key, bound); s != "" {
			errs = append(errs, fmt.Errorf("%s: unknown key %q (did you mean %s?)", u.origin, key, s))
			continue
		}
		rep.Unknown = append(rep.Unknown, key)
	}
	sort.Strings(rep.NotApplicable)
	sort.Strings(rep.Unknown)
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return rep, errors.Join(errs...)
}

// envUnbound records the environment's values of keys no binding knows: every
// PULSAR_PREFIX_ variable, and an exact-key variable when the file has the key or it is a
// Pulsar key (ordinary variables such as PATH are neither). PULSAR_PREFIX_ wins over the
// exact name, as for bound keys.
func envUnbound(env map[string]string, unbound map[string]unboundValue, isBound func(string) bool) {
	for name, v := range env {
		key, prefixed := strings.CutPrefix(name, PulsarEnvPrefix)
		if key == "" || isBound(key) {
			continue
		}
		if !prefixed {
			if _, inFile := unbound[key]; !inFile && !IsPulsarKey(key) {
				continue
			}
			if _, both := env[PulsarEnvPrefix+key]; both {
				continue
			}
		}
		unbound[key] = unboundValue{v, "environment " + name, unbound[key].parent}
	}
}

// Locate adds to every *FieldError in err (a Validate result, possibly joined) where its
// key's value came from, so the message names the file and line (or variable, or flag)
// besides the key and the bound it broke.
func Locate(err error, bs ...*Binding) error {
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if fe, ok := e.(*FieldError); ok && fe.Origin == "" {
			for _, b := range bs {
				if o := b.origins[fe.Key]; o != "" {
					fe.Origin = o
					break
				}
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return err
}

// FlagName turns a key into its flag name: maxMessageSize -> max-message-size,
// dbStorage_writeCacheMaxSizeMb -> db-storage-write-cache-max-size-mb.
func FlagName(key string) string {
	var sb strings.Builder
	rs := []rune(key)
	for i, r := range rs {
		switch {
		case r == '_' || r == '.' || r == '-':
			if sb.Len() > 0 && !strings.HasSuffix(sb.String(), "-") {
				sb.WriteByte('-')
			}
		case unicode.IsUpper(r):
			prevLower := i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]))
			nextLower := i > 0 && i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])
			if (prevLower || nextLower) && !strings.HasSuffix(sb.String(), "-") {
				sb.WriteByte('-')
			}
			sb.WriteRune(unicode.ToLower(r))
		default:
			sb.WriteRune(r)
		}
	}
	return sb.String()
}

// EnvName turns a key into its environment variable: maxMessageSize -> MAGNETAR_MAX_MESSAGE_SIZE.
func EnvName(key string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(FlagName(key), "-", "_"))
}

var durationType = reflect.TypeFor[time.Duration]()

func typeName(t reflect.Type) string {
	if t == durationType {
		return "duration"
	}
	if t.Kind() == reflect.Slice {
		return "strings"
	}
	return t.Kind().String()
}

func parseValue(t reflect.Type, s string) (reflect.Value, error) {
	s = strings.TrimSpace(s)
	v := reflect.New(t).Elem()
	if t == durationType {
		d, err := time.ParseDuration(s)
		if err != nil {
			return v, fmt.Errorf("not a duration (like 500ms, 30s): %w", err)
		}
		v.SetInt(int64(d))
		return v, nil
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		x, err := strconv.ParseBool(s)
		if err != nil {
			return v, fmt.Errorf("not a boolean (true or false)")
		}
		v.SetBool(x)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		x, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("not a whole number that fits %s", t.Kind())
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		x, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return v, fmt.Errorf("not a non-negative whole number that fits %s", t.Kind())
		}
		v.SetUint(x)
	case reflect.Float64, reflect.Float32:
		x, err := strconv.ParseFloat(s, t.Bits())
		if err != nil {
			return v, fmt.Errorf("not a number")
		}
		v.SetFloat(x)
	case reflect.Slice:
		if t.Elem().Kind() != reflect.String {
			return v, fmt.Errorf("unsupported list type %s", t)
		}
		var parts []string
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
		v.Set(reflect.ValueOf(parts).Convert(t))
	default:
		return v, fmt.Errorf("unsupported type %s", t)
	}
	return v, nil
}

func formatValue(v reflect.Value) (string, error) {
	if v.Type() == durationType {
		return time.Duration(v.Int()).String(), nil
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), nil
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), nil
	case reflect.Float64, reflect.Float32:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), nil
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String {
			return strings.Join(v.Interface().([]string), ","), nil
		}
	}
	return "", fmt.Errorf("unsupported type %s", v.Type())
}
