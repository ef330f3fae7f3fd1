package config

import (
	"bufio"
	"errors"
	"fmt"
	"os"
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
}

// flagValue records what the command line said without touching the config struct, so that
// file and environment values can be applied first and the flag last.
type flagValue struct {
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
	b := &Binding{fields: map[string][]reflect.Value{}, flags: map[string]*flagValue{}, sources: map[string]Source{}}
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
			fl := &flagValue{def: def, typ: typeName(sf.Type), kind: sf.Type}
			b.flags[key] = fl
			if fs != nil {
				fs.Var(fl, name, sf.Tag.Get("help")+" (key "+key+")")
				if sf.Type.Kind() == reflect.Bool {
					fs.Lookup(name).NoOptDefVal = "true" // --flag alone means true
				}
			}
		}
		b.fields[key] = append(b.fields[key], fv)
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

func (b *Binding) set(key, raw string, src Source) error {
	for _, fv := range b.fields[key] {
		val, err := parseValue(fv.Type(), raw)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", key, raw, err)
		}
		fv.Set(val)
	}
	b.sources[key] = src
	return nil
}

// Load applies, in order, the config file at path (skipped when path is empty), the
// environment (a list of "NAME=value" as os.Environ returns) and the flags given on the
// command line, to every binding. A file key that no binding knows is an error.
func Load(path string, environ []string, bs ...*Binding) error {
	owner := func(key string) *Binding {
		for _, b := range bs {
			if _, ok := b.fields[key]; ok {
				return b
			}
		}
		return nil
	}
	if path != "" {
		entries, err := ReadFile(path)
		if err != nil {
			return err
		}
		var errs []error
		for _, e := range entries {
			b := owner(e.Key)
			if b == nil {
				errs = append(errs, fmt.Errorf("config file %s line %d: unknown key %q", path, e.Line, e.Key))
				continue
			}
			if err := b.set(e.Key, e.Value, FromFile); err != nil {
				errs = append(errs, fmt.Errorf("config file %s line %d: %w", path, e.Line, err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
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
			for _, name := range []string{EnvName(key), key} {
				if v, ok := env[name]; ok {
					if err := b.set(key, v, FromEnv); err != nil {
						return fmt.Errorf("environment %s: %w", name, err)
					}
					break
				}
			}
		}
	}
	for _, b := range bs {
		for _, key := range b.keys {
			if fl := b.flags[key]; fl.set {
				if err := b.set(key, fl.raw, FromFlag); err != nil {
					return fmt.Errorf("flag --%s: %w", FlagName(key), err)
				}
			}
		}
	}
	return nil
}

// Entry is one key=value line of a config file.
type Entry struct {
	Key, Value string
	Line       int
}

// ReadFile parses a Java-properties config file (see the package doc).
func ReadFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	var out []Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i <= 0 {
			return nil, fmt.Errorf("config file %s line %d: want key=value, got %q", path, n, line)
		}
		out = append(out, Entry{Key: strings.TrimSpace(line[:i]), Value: strings.TrimSpace(line[i+1:]), Line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return out, nil
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
