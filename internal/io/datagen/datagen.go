// Package datagen is Pulsar's data-generator connector: a source of made-up Person records
// (JSON with a JSON schema) and a sink that logs what it reads and discards it.
//
// Source configs: sleepBetweenMessages (ms between records, default 50, as Pulsar's),
// maxMessages (ours: stop producing after this many; 0 = no end).
package datagen

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/magnetar-io/magnetar/internal/io/connector"
)

// Definition is the data-generator connector.
func Definition() *connector.Definition {
	return &connector.Definition{
		Name:        "data-generator",
		Description: "Test data generator source and a sink that discards",
		SourceClass: "org.apache.pulsar.io.datagenerator.DataGeneratorSource",
		SinkClass:   "org.apache.pulsar.io.datagenerator.DataGeneratorPrintSink",
		NewSource:   func() connector.Source { return &source{} },
		NewSink:     func() connector.Sink { return &sink{} },
		SourceFields: []connector.Field{
			{Name: "sleepBetweenMessages", TypeName: "long", Attributes: map[string]string{"help": "milliseconds between records", "defaultValue": "50"}},
			{Name: "maxMessages", TypeName: "long", Attributes: map[string]string{"help": "stop after this many records (0: never)", "defaultValue": "0"}},
		},
		EffectivelyOnceSink: true,
	}
}

// Person is one generated record.
type Person struct {
	ID        int64  `json:"id"`
	FirstName string `json:"firstName"`
	LastName  string `json:"lastName"`
	Age       int    `json:"age"`
	Email     string `json:"email"`
}

// PersonSchema is Person's schema definition (Avro record, as Pulsar's JSON schemas are).
const PersonSchema = `{"type":"record","name":"Person","namespace":"org.apache.pulsar.io.datagenerator","fields":[` +
	`{"name":"id","type":"long"},{"name":"firstName","type":["null","string"],"default":null},` +
	`{"name":"lastName","type":["null","string"],"default":null},{"name":"age","type":"int"},` +
	`{"name":"email","type":["null","string"],"default":null}]}`

type source struct {
	sleep   time.Duration
	max     int64
	seq     int64
	saved   int64
	sc      connector.SourceContext
	tracker connector.Tracker[int64]
}

func (s *source) Validate(c connector.Config) error {
	s.sleep = c.Millis("sleepBetweenMessages", 50*time.Millisecond)
	s.max = c.IntRange("maxMessages", 0, 0, 1<<62)
	return nil
}

var first = []string{"Ada", "Alan", "Grace", "Edsger", "Barbara", "Donald", "Frances", "Ken", "Leslie", "Margaret"}
var last = []string{"Lovelace", "Turing", "Hopper", "Dijkstra", "Liskov", "Knuth", "Allen", "Thompson", "Lamport", "Hamilton"}

func (s *source) Run(ctx context.Context, sc connector.SourceContext) error {
	// The sequence resumes from the checkpoint, so ids stay unique across restarts.
	if b, err := sc.Offsets().Load(ctx); err != nil {
		return err
	} else if len(b) > 0 {
		if s.seq, err = strconv.ParseInt(string(b), 10, 64); err != nil {
			return fmt.Errorf("data-generator: checkpoint %q: %w", b, err)
		}
	}
	schema := &connector.Schema{Type: "JSON", Definition: PersonSchema}
	s.sc = sc
	tracker := &s.tracker
	save := time.NewTicker(time.Second)
	defer save.Stop()
	for s.max == 0 || s.seq < s.max {
		s.seq++
		p := Person{ID: s.seq, FirstName: first[rand.IntN(len(first))], LastName: last[rand.IntN(len(last))], Age: 18 + rand.IntN(70)}
		p.Email = fmt.Sprintf("%s.%s.%d@example.com", p.FirstName, p.LastName, p.ID)
		b, _ := json.Marshal(p)
		rec := &connector.Record{Key: strconv.FormatInt(p.ID, 10), Value: b, Schema: schema, EventTime: time.Now()}
		rec.OnAck = tracker.Add(p.ID, true)
		if err := sc.Emit(ctx, rec); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-save.C:
			if err := s.checkpoint(); err != nil {
				return err
			}
		case <-time.After(s.sleep):
		}
	}
	<-ctx.Done()
	return nil
}

func (s *source) checkpoint() error {
	if n, ok := s.tracker.Committable(); ok && n != s.saved {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.sc.Offsets().Save(ctx, []byte(strconv.FormatInt(n, 10))); err != nil {
			return err
		}
		s.saved = n
	}
	return nil
}

// Close saves the last checkpoint (every receipt is in by now).
func (s *source) Close() error {
	if s.sc == nil {
		return nil
	}
	return s.checkpoint()
}

type sink struct{ sc connector.Context }

func (s *sink) Open(_ context.Context, sc connector.Context) error {
	s.sc = sc
	return nil
}

func (s *sink) Write(_ context.Context, rec *connector.Record) error {
	s.sc.Logger().Debug("data-generator sink", "topic", rec.Topic, "key", rec.Key, "value", string(rec.Value))
	rec.Ack()
	return nil
}

func (s *sink) Close() error { return nil }
