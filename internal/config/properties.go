package config

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Entry is one key=value line of a config file.
type Entry struct {
	Key, Value string
	Line       int
	// Parent is set on an entry of a YAML file that stood below a top-level key (Key is
	// "parent.child", parseYAML): Parent is that top-level key, so an unbound one is
	// reported as not applying when its parent is a Pulsar key, and is never taken for a
	// typo of a bound key.
	Parent string
}

// ReadFile parses a config file in the Java-properties format Pulsar's and BookKeeper's
// conf/*.conf files are read in (java.util.Properties.load), so a Pulsar file means the same
// here:
//
//   - a line starting with '#' or '!' (after blanks) is a comment; blank lines are skipped;
//   - the key ends at the first unescaped '=', ':' or blank; blanks around the separator
//     are skipped, so "key=value", "key: value" and "key value" are the same;
//   - a line ending in an odd number of backslashes continues on the next line, whose
//     leading blanks are dropped;
//   - escapes: \t \n \r \f, \uXXXX, and a backslash before any other character stands for
//     that character (so "\:" is ':' and "\\" is '\').
//
// Entry.Line is the line the entry starts on. A key given twice keeps both entries (the last
// wins when applied, as with Properties).
//
// A file named *.yml or *.yaml is YAML instead (Pulsar's functions_worker.yml): parseYAML
// says how its values become entries.
func ReadFile(path string) ([]Entry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	defer f.Close()
	if isYAML(path) {
		return parseYAML(f, path)
	}
	return parseProperties(f, path)
}

// parseProperties is ReadFile on a reader; name is the file name for errors.
func parseProperties(r io.Reader, path string) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		start := n
		for continues(line) && sc.Scan() {
			n++
			line = line[:len(line)-1] + strings.TrimLeft(sc.Text(), " \t\f")
		}
		if continues(line) { // a continuation on the last line: Properties drops the backslash
			line = line[:len(line)-1]
		}
		key, value, err := splitProperty(line)
		if err != nil {
			return nil, fmt.Errorf("config file %s line %d: %w", path, start, err)
		}
		out = append(out, Entry{Key: key, Value: value, Line: start})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	return out, nil
}

// continues reports whether a line ends in an odd number of backslashes.
func continues(line string) bool {
	k := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		k++
	}
	return k%2 == 1
}

// splitProperty splits one logical line into its unescaped key and value.
func splitProperty(line string) (string, string, error) {
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	key, err := unescape(line[:end])
	if err != nil {
		return "", "", err
	}
	if key == "" {
		return "", "", fmt.Errorf("want key=value, got %q", line)
	}
	value, err := unescape(rest)
	if err != nil {
		return "", "", fmt.Errorf("key %s: %w", key, err)
	}
	// Pulsar trims values before use (FieldParser); trailing blanks are never meant.
	return key, strings.TrimRight(value, " \t\f"), nil
}

func unescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			sb.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case 't':
			sb.WriteByte('\t')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 'f':
			sb.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 32)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			sb.WriteRune(rune(r))
			i += 4
		default:
			sb.WriteByte(s[i])
		}
	}
	return sb.String(), nil
}
