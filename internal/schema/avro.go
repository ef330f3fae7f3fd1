package schema

import (
	"encoding/json"
	"fmt"
	"strings"
)

// This file parses Avro schema definitions (the data of AVRO and JSON schemas) into a
// small tree and decides Avro schema resolution: can a reader schema read data written
// with a writer schema. Only what resolution needs is kept: names and aliases of named
// types, record fields (and whether they have a default), enum symbols (and the enum
// default), array items, map values, union branches and fixed sizes. Logical types and
// documentation are ignored: resolution works on the underlying type.

// maxAvroDepth bounds nesting while parsing, so a hostile definition cannot exhaust the
// stack.
const maxAvroDepth = 64

// avroNode is one Avro type.
type avroNode struct {
	kind     string // null boolean int long float double bytes string record enum array map union fixed
	name     string // full name of record, enum, fixed
	aliases  []string
	fields   []avroField // record
	symbols  []string    // enum
	enumDef  bool        // enum has a default symbol
	items    *avroNode   // array
	values   *avroNode   // map
	branches []*avroNode // union
	size     int         // fixed
}

type avroField struct {
	name       string
	aliases    []string
	typ        *avroNode
	hasDefault bool
}

var avroPrimitives = map[string]bool{"null": true, "boolean": true, "int": true, "long": true,
	"float": true, "double": true, "bytes": true, "string": true}

// parseAvro parses an Avro schema definition (JSON). Named types may be referenced by
// full or namespace-relative name after their definition; recursive records resolve to
// the same node.
func parseAvro(data []byte) (*avroNode, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: avro schema is not JSON: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: avro schema has trailing data", ErrInvalid)
	}
	p := &avroParser{named: map[string]*avroNode{}}
	return p.parse(v, "", 0)
}

type avroParser struct {
	named map[string]*avroNode
}

func fullName(name, ns string) string {
	if strings.Contains(name, ".") || ns == "" {
		return name
	}
	return ns + "." + name
}

func (p *avroParser) parse(v any, ns string, depth int) (*avroNode, error) {
	if depth > maxAvroDepth {
		return nil, fmt.Errorf("%w: avro schema nested deeper than %d", ErrInvalid, maxAvroDepth)
	}
	switch x := v.(type) {
	case string:
		if avroPrimitives[x] {
			return &avroNode{kind: x}, nil
		}
		if n, ok := p.named[fullName(x, ns)]; ok {
			return n, nil
		}
		if n, ok := p.named[x]; ok {
			return n, nil
		}
		return nil, fmt.Errorf("%w: avro type %q is not defined", ErrInvalid, x)
	case []any:
		u := &avroNode{kind: "union"}
		for _, b := range x {
			n, err := p.parse(b, ns, depth+1)
			if err != nil {
				return nil, err
			}
			if n.kind == "union" {
				return nil, fmt.Errorf("%w: avro unions may not contain unions", ErrInvalid)
			}
			for _, o := range u.branches {
				if o.kind == n.kind && o.name == n.name {
					return nil, fmt.Errorf("%w: avro union has two branches of type %s", ErrInvalid, describe(n))
				}
			}
			u.branches = append(u.branches, n)
		}
		return u, nil
	case map[string]any:
		return p.parseObject(x, ns, depth)
	}
	return nil, fmt.Errorf("%w: avro schema must be a name, an object or an array, got %T", ErrInvalid, v)
}

func stringList(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (p *avroParser) parseObject(o map[string]any, ns string, depth int) (*avroNode, error) {
	t, ok := o["type"]
	if !ok {
		return nil, fmt.Errorf("%w: avro object without \"type\"", ErrInvalid)
	}
	kind, isString := t.(string)
	if !isString {
		// {"type": {...}} or {"type": [...]}: a wrapped type.
		return p.parse(t, ns, depth+1)
	}
	switch kind {
	case "record", "error", "enum", "fixed":
		name, _ := o["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("%w: avro %s without a name", ErrInvalid, kind)
		}
		if s, ok := o["namespace"].(string); ok && !strings.Contains(name, ".") {
			ns = s
		}
		full := fullName(name, ns)
		if i := strings.LastIndex(full, "."); i >= 0 {
			ns = full[:i]
		}
		if _, dup := p.named[full]; dup {
			return nil, fmt.Errorf("%w: avro type %q defined twice", ErrInvalid, full)
		}
		n := &avroNode{kind: kind, name: full}
		for _, a := range stringList(o["aliases"]) {
			n.aliases = append(n.aliases, fullName(a, ns))
		}
		p.named[full] = n // before the fields, so a record can refer to itself
		switch kind {
		case "record", "error":
			n.kind = "record"
			fields, ok := o["fields"].([]any)
			if !ok {
				return nil, fmt.Errorf("%w: avro record %s without fields", ErrInvalid, full)
			}
			seen := map[string]bool{}
			for _, f := range fields {
				fo, ok := f.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%w: avro record %s: field is not an object", ErrInvalid, full)
				}
				fname, _ := fo["name"].(string)
				if fname == "" || seen[fname] {
					return nil, fmt.Errorf("%w: avro record %s: missing or duplicate field name %q", ErrInvalid, full, fname)
				}
				seen[fname] = true
				ft, ok := fo["type"]
				if !ok {
					return nil, fmt.Errorf("%w: avro field %s.%s without a type", ErrInvalid, full, fname)
				}
				typ, err := p.parse(ft, ns, depth+1)
				if err != nil {
					return nil, err
				}
				_, hasDefault := fo["default"]
				n.fields = append(n.fields, avroField{name: fname, aliases: stringList(fo["aliases"]), typ: typ, hasDefault: hasDefault})
			}
		case "enum":
			n.symbols = stringList(o["symbols"])
			if len(n.symbols) == 0 {
				return nil, fmt.Errorf("%w: avro enum %s without symbols", ErrInvalid, full)
			}
			_, n.enumDef = o["default"].(string)
		case "fixed":
			size, err := jsonInt(o["size"])
			if err != nil || size < 0 {
				return nil, fmt.Errorf("%w: avro fixed %s needs a size", ErrInvalid, full)
			}
			n.size = size
		}
		return n, nil
	case "array":
		items, ok := o["items"]
		if !ok {
			return nil, fmt.Errorf("%w: avro array without items", ErrInvalid)
		}
		it, err := p.parse(items, ns, depth+1)
		if err != nil {
			return nil, err
		}
		return &avroNode{kind: "array", items: it}, nil
	case "map":
		values, ok := o["values"]
		if !ok {
			return nil, fmt.Errorf("%w: avro map without values", ErrInvalid)
		}
		vt, err := p.parse(values, ns, depth+1)
		if err != nil {
			return nil, err
		}
		return &avroNode{kind: "map", values: vt}, nil
	}
	if avroPrimitives[kind] {
		// {"type": "long", "logicalType": "timestamp-millis"}: the logical type is ignored.
		return &avroNode{kind: kind}, nil
	}
	return p.parse(kind, ns, depth+1) // a reference by name
}

func jsonInt(v any) (int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("not a number")
	}
	i, err := n.Int64()
	if err != nil || i > 1<<31 {
		return 0, fmt.Errorf("not an int")
	}
	return int(i), nil
}

// avroPair is a (writer, reader) pair already being checked, so recursive records end.
type avroPair struct{ w, r *avroNode }

// maxResolveSteps bounds the work of one readability check. Union trials can revisit
// pairs, so a hostile definition could otherwise make the check exponential; past the
// bound the schemas are reported as not resolvable.
const maxResolveSteps = 100_000

// resolver carries one check's state: pairs in progress (assumed readable, so recursion
// ends), pairs known to fail (a failure found under optimistic assumptions is a real
// failure, so caching it is sound) and the step budget.
type resolver struct {
	inProgress map[avroPair]bool
	failed     map[avroPair]error
	steps      int
}

// canRead reports whether data written with writer can be read with reader, following the
// Avro specification's schema resolution rules. It returns the first reason it cannot.
func canRead(reader, writer *avroNode) error {
	rs := &resolver{inProgress: map[avroPair]bool{}, failed: map[avroPair]error{}}
	return rs.resolve(writer, reader, "")
}

func (rs *resolver) resolve(w, r *avroNode, path string) error {
	pair := avroPair{w, r}
	if err, ok := rs.failed[pair]; ok {
		return err
	}
	if rs.inProgress[pair] {
		return nil
	}
	if rs.steps++; rs.steps > maxResolveSteps {
		return fmt.Errorf("schemas too complex to compare (more than %d steps)", maxResolveSteps)
	}
	rs.inProgress[pair] = true
	err := rs.resolvePair(w, r, path)
	delete(rs.inProgress, pair)
	if err != nil {
		rs.failed[pair] = err
	}
	return err
}

func (rs *resolver) resolvePair(w, r *avroNode, path string) error {
	at := func() string {
		if path == "" {
			return "the root"
		}
		return path
	}
	if w.kind == "union" {
		// Every branch the writer may have used must be readable.
		for _, b := range w.branches {
			if err := rs.resolve(b, r, path); err != nil {
				return err
			}
		}
		return nil
	}
	if r.kind == "union" {
		for _, b := range r.branches {
			if rs.resolve(w, b, path) == nil {
				return nil
			}
			if rs.steps > maxResolveSteps {
				break
			}
		}
		return fmt.Errorf("at %s: no branch of the reader's union reads the writer's %s", at(), describe(w))
	}
	if w.kind != r.kind {
		if promotable(w.kind, r.kind) {
			return nil
		}
		return fmt.Errorf("at %s: reader's %s cannot read writer's %s", at(), describe(r), describe(w))
	}
	switch w.kind {
	case "record":
		// No name check: Avro's resolver (ResolvingGrammarGenerator / Resolver, which
		// Pulsar's AvroSchemaCompatibilityCheck validates with) matches records by their
		// fields, and names only enums and fixed. The official Python client's
		// test_schema_evolve and test_avro_required_default evolve User1 to User2.
		for _, rf := range r.fields {
			wf := writerField(w, rf)
			p := rf.name
			if path != "" {
				p = path + "." + rf.name
			}
			if wf == nil {
				if !rf.hasDefault {
					return fmt.Errorf("at %s: reader field %q is missing from the writer and has no default", at(), rf.name)
				}
				continue
			}
			if err := rs.resolve(wf.typ, rf.typ, p); err != nil {
				return err
			}
		}
	case "enum":
		if !namesMatch(w, r) {
			return fmt.Errorf("at %s: enum name %s does not match %s", at(), r.name, w.name)
		}
		if r.enumDef {
			return nil
		}
		for _, s := range w.symbols {
			if !contains(r.symbols, s) {
				return fmt.Errorf("at %s: enum symbol %q unknown to the reader, which has no default", at(), s)
			}
		}
	case "fixed":
		if !namesMatch(w, r) || w.size != r.size {
			return fmt.Errorf("at %s: fixed %s(%d) does not match %s(%d)", at(), r.name, r.size, w.name, w.size)
		}
	case "array":
		return rs.resolve(w.items, r.items, path+"[]")
	case "map":
		return rs.resolve(w.values, r.values, path+"{}")
	}
	return nil
}

// promotable is Avro's list of writer -> reader promotions.
func promotable(w, r string) bool {
	switch w {
	case "int":
		return r == "long" || r == "float" || r == "double"
	case "long":
		return r == "float" || r == "double"
	case "float":
		return r == "double"
	case "string":
		return r == "bytes"
	case "bytes":
		return r == "string"
	}
	return false
}

func unqualified(n string) string {
	if i := strings.LastIndex(n, "."); i >= 0 {
		return n[i+1:]
	}
	return n
}

// namesMatch: the same name (full or unqualified), or the writer's name is one of the
// reader's aliases.
func namesMatch(w, r *avroNode) bool {
	if w.name == r.name || unqualified(w.name) == unqualified(r.name) {
		return true
	}
	for _, a := range r.aliases {
		if a == w.name || unqualified(a) == unqualified(w.name) {
			return true
		}
	}
	return false
}

// writerField finds the writer's field for a reader field, by name or by reader alias.
func writerField(w *avroNode, rf avroField) *avroField {
	for i := range w.fields {
		if w.fields[i].name == rf.name || contains(rf.aliases, w.fields[i].name) {
			return &w.fields[i]
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func describe(n *avroNode) string {
	if n.name != "" {
		return n.kind + " " + n.name
	}
	return n.kind
}
