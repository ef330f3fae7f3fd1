// Package file is Pulsar's file connector: a source that publishes every line of the files
// that appear in a directory, and (ours; Pulsar has no file sink) a sink that appends
// records to files.
//
// Source configs (Pulsar's FileSourceConfig names): inputDirectory (required), recurse
// (true), keepFile (false: a file is deleted once all its lines are published),
// processedFileSuffix (rename a finished file instead of deleting it), fileFilter (regular
// expression on the name, default "[^.].*"), pathFilter (on the path below
// inputDirectory), minimumFileAge / maximumFileAge (ms), minimumSize / maximumSize (bytes),
// ignoreHiddenFiles (true), pollingInterval (ms, 10000). Ours: maxLineBytes (1 MiB; a longer
// line is split).
//
// Checkpoint: the byte offset reached in the file being read and the files finished and kept,
// so a restart resumes mid-file and never publishes a committed line twice.
package file

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Definition is the file connector.
func Definition() *connector.Definition {
	return &connector.Definition{
		Name:        "file",
		Description: "Reads lines from files in a directory; writes records to files",
		SourceClass: "org.apache.pulsar.io.file.FileSource",
		SinkClass:   "io.magnetar.io.file.FileSink",
		NewSource:   func() connector.Source { return &source{} },
		NewSink:     func() connector.Sink { return &sink{} },
		SourceFields: []connector.Field{
			{Name: "inputDirectory", TypeName: "String", Attributes: map[string]string{"required": "true", "help": "the directory to read files from"}},
			{Name: "keepFile", TypeName: "boolean", Attributes: map[string]string{"defaultValue": "false"}},
			{Name: "pollingInterval", TypeName: "long", Attributes: map[string]string{"defaultValue": "10000"}},
		},
		SinkFields: []connector.Field{
			{Name: "outputDirectory", TypeName: "String", Attributes: map[string]string{"required": "true"}},
			{Name: "format", TypeName: "String", Attributes: map[string]string{"defaultValue": "line", "help": "line (the value and a newline) or json (one object per record)"}},
		},
	}
}

type sourceConfig struct {
	dir                    string
	recurse, keep, hidden  bool
	suffix                 string
	fileFilter, pathFilter *regexp.Regexp
	minAge, maxAge         time.Duration
	minSize, maxSize       int64
	poll                   time.Duration
	maxLine                int
}

func parseSource(c connector.Config) (*sourceConfig, error) {
	s := &sourceConfig{
		dir: c.Required("inputDirectory"), recurse: c.Bool("recurse", true), keep: c.Bool("keepFile", false),
		suffix: c.String("processedFileSuffix", ""), hidden: c.Bool("ignoreHiddenFiles", true),
		minAge: c.Millis("minimumFileAge", 0), maxAge: c.Millis("maximumFileAge", 0),
		minSize: c.Int("minimumSize", 1), maxSize: c.Int("maximumSize", 0),
		poll: c.Millis("pollingInterval", 10*time.Second), maxLine: int(c.IntRange("maxLineBytes", 1<<20, 1, 64<<20)),
	}
	var err error
	if s.fileFilter, err = regexp.Compile("^(?:" + c.String("fileFilter", `[^.].*`) + ")$"); err != nil {
		return nil, fmt.Errorf("configs: fileFilter: %w", err)
	}
	if p := c.String("pathFilter", ""); p != "" {
		if s.pathFilter, err = regexp.Compile(p); err != nil {
			return nil, fmt.Errorf("configs: pathFilter: %w", err)
		}
	}
	if s.poll <= 0 {
		s.poll = 10 * time.Second
	}
	return s, c.Err()
}

// checkpoint is the source's saved state.
type checkpoint struct {
	// Reading is the file being read and the offset after its last published line.
	Reading string `json:"reading,omitempty"`
	Offset  int64  `json:"offset,omitempty"`
	// Kept are finished files left in place (keepFile), by path: "size:mtime".
	Kept map[string]string `json:"kept,omitempty"`
}

type pos struct {
	path   string
	offset int64
}

type source struct {
	cfg     *sourceConfig
	sc      connector.SourceContext
	cp      checkpoint
	tracker connector.Tracker[pos]
}

func (s *source) Validate(c connector.Config) error {
	var err error
	s.cfg, err = parseSource(c)
	return err
}

func (s *source) Run(ctx context.Context, sc connector.SourceContext) error {
	s.sc = sc
	if b, err := sc.Offsets().Load(ctx); err != nil {
		return err
	} else if len(b) > 0 {
		if err := json.Unmarshal(b, &s.cp); err != nil {
			return fmt.Errorf("file: checkpoint is corrupt: %w", err)
		}
	}
	if s.cp.Kept == nil {
		s.cp.Kept = map[string]string{}
	}
	for {
		files, err := s.scan()
		if err != nil {
			sc.SourceException(err)
		}
		for _, f := range files {
			if err := s.readFile(ctx, f); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(s.cfg.poll):
		}
	}
}

// identity says whether a kept file is still the one finished (same size and time).
func identity(fi fs.FileInfo) string {
	return strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}

func (s *source) scan() ([]string, error) {
	type cand struct {
		path string
		mod  time.Time
	}
	var out []cand
	now := time.Now()
	seen := map[string]bool{}
	err := filepath.WalkDir(s.cfg.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == s.cfg.dir {
				return nil
			}
			if !s.cfg.recurse || (s.cfg.hidden && strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || (s.cfg.hidden && strings.HasPrefix(name, ".")) || !s.cfg.fileFilter.MatchString(name) {
			return nil
		}
		if s.cfg.suffix != "" && strings.HasSuffix(name, s.cfg.suffix) {
			return nil
		}
		if rel, _ := filepath.Rel(s.cfg.dir, filepath.Dir(path)); s.cfg.pathFilter != nil && !s.cfg.pathFilter.MatchString(rel) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // gone meanwhile
		}
		seen[path] = true
		age := now.Sub(fi.ModTime())
		if fi.Size() < s.cfg.minSize || (s.cfg.maxSize > 0 && fi.Size() > s.cfg.maxSize) ||
			age < s.cfg.minAge || (s.cfg.maxAge > 0 && age > s.cfg.maxAge) {
			return nil
		}
		if s.cp.Kept[path] == identity(fi) {
			return nil
		}
		out = append(out, cand{path, fi.ModTime()})
		return nil
	})
	for p := range s.cp.Kept {
		if !seen[p] {
			delete(s.cp.Kept, p) // the file is gone: forget it
		}
	}
	// The file being read when the instance stopped goes first.
	sort.Slice(out, func(i, j int) bool {
		if (out[i].path == s.cp.Reading) != (out[j].path == s.cp.Reading) {
			return out[i].path == s.cp.Reading
		}
		if !out[i].mod.Equal(out[j].mod) {
			return out[i].mod.Before(out[j].mod)
		}
		return out[i].path < out[j].path
	})
	paths := make([]string, len(out))
	for i, c := range out {
		paths[i] = c.path
	}
	return paths, err
}

// readFile publishes path's lines from the checkpoint on, then, once every line is
// acknowledged, deletes, renames or remembers it.
func (s *source) readFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		s.sc.SourceException(err)
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		s.sc.SourceException(err)
		return nil
	}
	var off int64
	if s.cp.Reading == path && s.cp.Offset <= fi.Size() {
		off = s.cp.Offset
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return err
		}
	}
	s.cp.Reading, s.cp.Offset = path, off
	props := map[string]string{"file.path": path, "file.name": filepath.Base(path), "file.modified_time": strconv.FormatInt(fi.ModTime().UnixMilli(), 10)}
	br := bufio.NewReaderSize(f, 64<<10)
	flush := time.Now()
	for {
		line, err := readLine(br, s.cfg.maxLine)
		if len(line) > 0 {
			off += int64(len(line))
			value := strings.TrimRight(string(line), "\r\n")
			rec := &connector.Record{Value: []byte(value), Properties: props, EventTime: fi.ModTime()}
			rec.OnAck = s.tracker.Add(pos{path, off}, true)
			if err := s.sc.Emit(ctx, rec); err != nil {
				return err
			}
			if time.Since(flush) > time.Second {
				if err := s.save(); err != nil {
					return err
				}
				flush = time.Now()
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			s.sc.SourceException(err)
			return nil
		}
	}
	// Finish the file only when every line of it is published.
	for s.tracker.Pending() > 0 {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Millisecond):
		}
	}
	switch {
	case s.cfg.suffix != "":
		if err := os.Rename(path, path+s.cfg.suffix); err != nil {
			s.sc.SourceException(err)
		}
	case s.cfg.keep:
		s.cp.Kept[path] = identity(fi)
	default:
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.sc.SourceException(err)
		}
	}
	s.cp.Reading, s.cp.Offset = "", 0
	return s.saveState()
}

// readLine reads one line with its newline, at most max bytes (a longer line is split).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var out []byte
	for {
		frag, err := br.ReadSlice('\n')
		out = append(out, frag...)
		if err == nil || !errors.Is(err, bufio.ErrBufferFull) || len(out) >= max {
			return out, err
		}
	}
}

// save records the committable offset of the file being read.
func (s *source) save() error {
	if p, ok := s.tracker.Committable(); ok && p.path == s.cp.Reading {
		s.cp.Offset = p.offset
	}
	return s.saveState()
}

func (s *source) saveState() error {
	b, _ := json.Marshal(s.cp)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.sc.Offsets().Save(ctx, b)
}

// Close saves how far the file being read is published.
func (s *source) Close() error {
	if s.sc == nil {
		return nil
	}
	return s.save()
}
