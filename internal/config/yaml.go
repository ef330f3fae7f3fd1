package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// isYAML says whether a config file is YAML by its name: Pulsar ships functions_worker.yml
// (and the Helm charts mount it as such), every other file of its is Java properties.
func isYAML(path string) bool {
	p := strings.ToLower(path)
	return strings.HasSuffix(p, ".yml") || strings.HasSuffix(p, ".yaml")
}

// maxYAMLBytes bounds a YAML config file: a config is kilobytes, and anchors/aliases can
// make a small document expand, so the parser gets a bounded input.
const maxYAMLBytes = 4 << 20

// parseYAML reads a YAML config file (Pulsar's functions_worker.yml shape: one mapping of
// WorkerConfig's field names) into the same entries the properties reader gives, so
// binding, environment overrides and the report of keys that do not apply work alike:
//
//   - a scalar is the value as written (null and ~ are blank, which means the default);
//   - a list of scalars is joined with ',' (our list keys: superUserRoles, tlsProtocols);
//   - the entries of `properties` (WorkerConfig's map of keys it has no field for, such as
//     tokenPublicKey for authentication providers) are keys of their own, as Pulsar hands
//     them to the providers;
//   - any other mapping (functionRuntimeFactoryConfigs, functionInstanceMinResources) gives
//     one entry per leaf, keyed "parent.child" with Entry.Parent set, so each is bound when
//     a binding has that dotted key and reported by name when not;
//   - a list of mappings gives one entry per leaf too, keyed "parent.N.child".
//
// A document that is not a mapping, or a key that is not a scalar, is an error naming the
// file and line.
func parseYAML(r io.Reader, path string) ([]Entry, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxYAMLBytes+1))
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	if len(data) > maxYAMLBytes {
		return nil, fmt.Errorf("config file %s: larger than %d bytes", path, maxYAMLBytes)
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) { // an empty file, or only comments: no keys
			return nil, nil
		}
		return nil, yamlSyntaxError(path, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config file %s line %d: more than one YAML document", path, extra.Line)
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config file %s line %d: want a mapping of key: value, got a %s", path, root.Line, kindName(root))
	}
	y := yamlReader{path: path}
	if err := y.mapping(root, "", "", 0); err != nil {
		return nil, err
	}
	return y.out, nil
}

type yamlReader struct {
	path   string
	out    []Entry
	visits int // mappings and values read, against maxYAMLNodes
}

// maxYAMLNodes bounds the values and mappings one file is read as, aliases expanded, and
// maxYAMLDepth its nesting, so an alias bomb or an alias inside its own anchor costs an
// error, not memory, time or the stack (a config has a few hundred).
const (
	maxYAMLNodes = 20000
	maxYAMLDepth = 32
)

// mapping adds the entries of a mapping node whose keys are prefixed with prefix (empty at
// the top) and belong to the top-level key parent.
func (y *yamlReader) mapping(n *yaml.Node, prefix, parent string, depth int) error {
	if depth > maxYAMLDepth {
		return fmt.Errorf("config file %s line %d: nested more than %d levels deep (or an alias refers to its own anchor)", y.path, n.Line, maxYAMLDepth)
	}
	if y.visits++; y.visits > maxYAMLNodes {
		return fmt.Errorf("config file %s line %d: more than %d values (with aliases expanded)", y.path, n.Line, maxYAMLNodes)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		if k.Kind != yaml.ScalarNode || strings.TrimSpace(k.Value) == "" {
			return fmt.Errorf("config file %s line %d: a key must be a non-empty name", y.path, k.Line)
		}
		key := strings.TrimSpace(k.Value)
		if strings.ContainsAny(key, "=:") {
			return fmt.Errorf("config file %s line %d: key %q: '=' and ':' are not allowed in a key", y.path, k.Line, key)
		}
		if key == "<<" { // a merge key: its mapping's entries are this mapping's
			if err := y.merge(v, prefix, parent, depth+1); err != nil {
				return err
			}
			continue
		}
		full, top := key, parent
		if prefix != "" {
			full = prefix + "." + key
		} else if key == "properties" && v.Kind == yaml.MappingNode {
			// WorkerConfig.properties: keys without a field of their own, top-level here.
			if err := y.mapping(v, "", "", depth+1); err != nil {
				return err
			}
			continue
		} else {
			top = key
		}
		if err := y.value(v, full, top, prefix != "", k.Line, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func (y *yamlReader) merge(v *yaml.Node, prefix, parent string, depth int) error {
	switch v.Kind {
	case yaml.MappingNode:
		return y.mapping(v, prefix, parent, depth)
	case yaml.SequenceNode:
		for _, m := range v.Content {
			if m = resolve(m); m.Kind != yaml.MappingNode {
				return fmt.Errorf("config file %s line %d: a merge key (<<) takes mappings", y.path, m.Line)
			}
			if err := y.mapping(m, prefix, parent, depth); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("config file %s line %d: a merge key (<<) takes mappings", y.path, v.Line)
}

// value adds the entries of one value: key is its full (dotted) name, parent the top-level
// key, nested whether key is below the top level.
func (y *yamlReader) value(v *yaml.Node, key, parent string, nested bool, line, depth int) error {
	if y.visits++; y.visits > maxYAMLNodes {
		return fmt.Errorf("config file %s line %d: more than %d values (with aliases expanded)", y.path, line, maxYAMLNodes)
	}
	if depth > maxYAMLDepth {
		return fmt.Errorf("config file %s line %d: nested more than %d levels deep (or an alias refers to its own anchor)", y.path, line, maxYAMLDepth)
	}
	e := Entry{Key: key, Line: line}
	if nested {
		e.Parent = parent
	}
	switch v.Kind {
	case yaml.ScalarNode:
		e.Value = scalar(v)
	case yaml.SequenceNode:
		items := make([]string, 0, len(v.Content))
		for i, it := range v.Content {
			it = resolve(it)
			if it.Kind != yaml.ScalarNode {
				// A list of mappings (tolerations, say): one entry per leaf, by index.
				return y.structuredList(v, key, parent, depth)
			}
			s := scalar(it)
			if strings.Contains(s, ",") {
				return fmt.Errorf("config file %s line %d: %s item %d %q: list items cannot contain ',' (list keys are comma-separated)", y.path, it.Line, key, i, s)
			}
			if s != "" {
				items = append(items, s)
			}
		}
		e.Value = strings.Join(items, ",")
	case yaml.MappingNode:
		if len(v.Content) == 0 { // {}: nothing set, as Pulsar reads an empty map
			break
		}
		return y.mapping(v, key, parent, depth+1)
	default:
		return fmt.Errorf("config file %s line %d: %s: unsupported YAML %s", y.path, v.Line, key, kindName(v))
	}
	y.out = append(y.out, e)
	return nil
}

func (y *yamlReader) structuredList(v *yaml.Node, key, parent string, depth int) error {
	for i, it := range v.Content {
		if err := y.value(resolve(it), fmt.Sprintf("%s.%d", key, i), parent, true, it.Line, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// resolve follows an alias (*name) to its anchored node.
func resolve(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// scalar is a scalar's value as the properties reader would give it: null is blank.
func scalar(n *yaml.Node) string {
	if n.Tag == "!!null" {
		return ""
	}
	return strings.TrimSpace(n.Value)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return "value"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// yamlMessage splits yaml.v3's "yaml: line N: message" (the line is optional).
var yamlMessage = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// yamlSyntaxError names the file and line of a document yaml.v3 refused. yaml.v3 numbers
// the lines of its scanner's errors from 1 but its parser's from 0, leaving the line out
// when it is 0: its parser's errors are the "did not find expected ..." ones (the mark is
// where the construct it was parsing started), so those get one added, and no line means
// the first. A mark at the end of the stream is past the last line; it names the last.
func yamlSyntaxError(path string, data []byte, err error) error {
	msg := err.Error()
	m := yamlMessage.FindStringSubmatchIndex(msg)
	if m == nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	text := msg[m[1]:]
	line := 0
	if m[2] >= 0 {
		line, _ = strconv.Atoi(msg[m[2]:m[3]])
	}
	if strings.HasPrefix(text, "did not find expected") {
		line++
	}
	if line == 0 {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	lines := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		lines++
	}
	line = min(line, max(lines, 1))
	return fmt.Errorf("config file %s line %d: yaml: %s", path, line, text)
}
