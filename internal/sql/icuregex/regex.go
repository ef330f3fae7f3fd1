// Package regex stands in for github.com/dolthub/go-icu-regex, which go-mysql-server uses
// for REGEXP_LIKE, REGEXP_INSTR, REGEXP_SUBSTR and REGEXP_REPLACE (the go.mod replace
// directive points here). The original compiles an ICU WebAssembly module with wazero when
// its package is initialised: ~2 s of every magnetar process start, of every role, and
// ~18 s under the race detector, whether or not SQL is used. This one implements the same
// interface over Go's regexp (RE2 syntax: no backreferences or lookaround, which ICU has),
// costs nothing at start, and is written for Magnetar (no code from the original).
//
// Positions and occurrences are 1-based and count characters (runes), as MySQL's do.
package regex

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Regex is the interface go-mysql-server calls (the original's method set).
type Regex interface {
	SetRegexString(ctx context.Context, regexStr string, flags RegexFlags) error
	SetMatchString(ctx context.Context, matchStr string) error
	// IndexOf is the 1-based character position of the occurrence-th match at or after
	// start (after its end when endIndex), 0 when there is none.
	IndexOf(ctx context.Context, start int, occurrence int, endIndex bool) (int, error)
	Matches(ctx context.Context, start int, occurrence int) (bool, error)
	// Replace replaces the occurrence-th match at or after position (0: every match).
	Replace(ctx context.Context, replacementStr string, position int, occurrence int) (string, error)
	Substring(ctx context.Context, start int, occurrence int) (string, bool, error)
	StringBufferSize() uint32
	Close() error
}

// RegexFlags are ICU's flag values, which go-mysql-server passes.
type RegexFlags uint32

// The flags go-mysql-server sets (ICU's values).
const (
	RegexFlags_None             RegexFlags = 0
	RegexFlags_Unix_Lines       RegexFlags = 1
	RegexFlags_Case_Insensitive RegexFlags = 2
	RegexFlags_Comments         RegexFlags = 4
	RegexFlags_Multiline        RegexFlags = 8
	RegexFlags_Literal          RegexFlags = 16
	RegexFlags_Dot_All          RegexFlags = 32
)

// Errors of a Regex used out of order or given a bad pattern.
var (
	ErrRegexNotYetSet = errors.New("SetRegexString must be called before any other function")
	ErrMatchNotYetSet = errors.New("SetMatchString must be called as there is nothing to match against")
	ErrInvalidRegex   = errors.New("the given regular expression is invalid")
)

// ShouldPanic is kept for the interface's users; nothing here needs closing.
var ShouldPanic = true

// SetRegexLeakHandler is accepted and unused: a Regex here holds no resource to leak.
func SetRegexLeakHandler(func()) {}

// SetPoolFetchMax is accepted and unused (there is no module pool).
func SetPoolFetchMax(uint64) {}

// CreateRegex returns an empty Regex; the buffer size is ignored.
func CreateRegex(uint32) Regex { return &goRegex{} }

type goRegex struct {
	re       *regexp.Regexp
	s        string
	matchSet bool
}

func (r *goRegex) SetRegexString(_ context.Context, pattern string, flags RegexFlags) error {
	if flags&RegexFlags_Literal != 0 {
		pattern = regexp.QuoteMeta(pattern)
	}
	prefix := ""
	if flags&RegexFlags_Case_Insensitive != 0 {
		prefix += "i"
	}
	if flags&RegexFlags_Multiline != 0 {
		prefix += "m"
	}
	if flags&RegexFlags_Dot_All != 0 {
		prefix += "s"
	}
	if prefix != "" {
		pattern = "(?" + prefix + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidRegex, err)
	}
	r.re = re
	return nil
}

func (r *goRegex) SetMatchString(_ context.Context, s string) error {
	if r.re == nil {
		return ErrRegexNotYetSet
	}
	r.s, r.matchSet = s, true
	return nil
}

func (r *goRegex) ready() error {
	if r.re == nil {
		return ErrRegexNotYetSet
	}
	if !r.matchSet {
		return ErrMatchNotYetSet
	}
	return nil
}

// byteOffset is the byte offset of 1-based character position pos (len(s) past the end).
func byteOffset(s string, pos int) int {
	if pos <= 1 {
		return 0
	}
	n := 1
	for i := range s {
		if n == pos {
			return i
		}
		n++
	}
	return len(s)
}

// find returns the byte span of the occurrence-th match at or after character start.
func (r *goRegex) find(start, occurrence int) ([]int, bool) {
	if occurrence < 1 {
		occurrence = 1
	}
	from := byteOffset(r.s, start)
	if start > utf8.RuneCountInString(r.s)+1 {
		return nil, false
	}
	ms := r.re.FindAllStringIndex(r.s[from:], occurrence)
	if len(ms) < occurrence {
		return nil, false
	}
	m := ms[occurrence-1]
	return []int{from + m[0], from + m[1]}, true
}

func (r *goRegex) IndexOf(_ context.Context, start, occurrence int, endIndex bool) (int, error) {
	if err := r.ready(); err != nil {
		return 0, err
	}
	m, ok := r.find(start, occurrence)
	if !ok {
		return 0, nil
	}
	at := m[0]
	if endIndex {
		at = m[1]
	}
	return utf8.RuneCountInString(r.s[:at]) + 1, nil
}

func (r *goRegex) Matches(_ context.Context, start, occurrence int) (bool, error) {
	if err := r.ready(); err != nil {
		return false, err
	}
	_, ok := r.find(start, occurrence)
	return ok, nil
}

func (r *goRegex) Substring(_ context.Context, start, occurrence int) (string, bool, error) {
	if err := r.ready(); err != nil {
		return "", false, err
	}
	m, ok := r.find(start, occurrence)
	if !ok {
		return "", false, nil
	}
	return r.s[m[0]:m[1]], true, nil
}

func (r *goRegex) Replace(_ context.Context, repl string, position, occurrence int) (string, error) {
	if err := r.ready(); err != nil {
		return "", err
	}
	from := byteOffset(r.s, position)
	head, tail := r.s[:from], r.s[from:]
	var b strings.Builder
	b.WriteString(head)
	last, n := 0, 0
	for _, m := range r.re.FindAllStringSubmatchIndex(tail, -1) {
		n++
		if occurrence > 0 && n != occurrence {
			continue
		}
		b.WriteString(tail[last:m[0]])
		b.Write(r.re.ExpandString(nil, repl, tail, m))
		last = m[1]
		if occurrence > 0 {
			break
		}
	}
	b.WriteString(tail[last:])
	return b.String(), nil
}

func (r *goRegex) StringBufferSize() uint32 { return 0 }

func (r *goRegex) Close() error { return nil }
