package mysql

import (
	"encoding/json"
	"testing"
)

func TestHistoryRecordRoundTrip(t *testing.T) {
	cols := []*colInfo{
		{name: "id", dataType: "bigint", unsigned: true, key: true}, {name: "at", dataType: "datetime", precision: 6},
		{name: "b", dataType: "bit", bits: 12}, {name: "k", dataType: "enum", members: []string{"a", `b"c`}}, {name: "n", dataType: "varchar"},
	}
	changes := []ddlChange{
		{id: tableID{"src", `we"ird.name`}, kind: changeCreate, cols: cols},
		{id: tableID{"src", "gone"}, kind: changeDrop},
	}
	b := encodeHistory("server1", position{"binlog.000002", 1234}, true, 99, "src", "RENAME ...", changes)
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["ddl"] != "RENAME ..." || raw["databaseName"] != "src" || raw["position"].(map[string]any)["file"] != "binlog.000002" ||
		raw["position"].(map[string]any)["snapshot"] != true || raw["source"].(map[string]any)["server"] != "server1" {
		t.Fatalf("record: %s", b)
	}
	entries, err := decodeHistory(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[0].id != changes[0].id || entries[1].id != changes[1].id || entries[1].cols != nil ||
		entries[0].pos != (position{"binlog.000002", 1234}) {
		t.Fatalf("entries: %+v", entries)
	}
	if got, want := describeCols(entries[0].cols), describeCols(cols); got != want {
		t.Fatalf("columns %s, want %s", got, want)
	}
	for _, bad := range []string{
		`{}`, `{"position":{"file":"f","pos":1},"tableChanges":[{"type":"CREATE","id":"\"a\".\"b\""}]}`,
		`{"position":{"file":"f","pos":1},"tableChanges":[{"type":"FROB","id":"\"a\".\"b\""}]}`,
		`{"position":{"file":"f","pos":1},"tableChanges":[{"type":"DROP","id":"a.b"}]}`,
		`{"position":{"file":"f","pos":1},"tableChanges":[{"type":"ALTER","id":"\"a\".\"b\"","table":{"columns":[{"name":"x","typeName":"INT","position":2}]}}]}`,
		`{"position":{"file":"f","pos":1},"tableChanges":[{"type":"ALTER","id":"\"a\".\"b\"","table":{"primaryKeyColumnNames":["y"],"columns":[{"name":"x","typeName":"INT","position":1}]}}]}`,
		`{"position":{"file":"f","pos":1},"tableChanges":[{"type":"ALTER","id":"\"a\".\"b\"","table":{"columns":[{"name":"x","typeName":"INT","position":1},{"name":"X","typeName":"INT","position":2}]}}]}`,
	} {
		if _, err := decodeHistory([]byte(bad)); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
}

func TestParseID(t *testing.T) {
	for _, id := range []tableID{{"a", "b"}, {"", "t"}, {`q"`, `.."x""`}} {
		got, err := parseID(quoteID(id))
		if err != nil || got != id {
			t.Errorf("%q: %v %v", quoteID(id), got, err)
		}
	}
	for _, bad := range []string{``, `"a"`, `"a".`, `"a"."b"."c"`, `a.b`, `"a"x"b"`, `"a"."b`, `"a".""`} {
		if id, err := parseID(bad); err == nil {
			t.Errorf("%q: parsed as %v", bad, id)
		}
	}
}

func TestVersionsAt(t *testing.T) {
	v := newVersions()
	id := tableID{"src", "t"}
	one := []*colInfo{{name: "a", dataType: "int"}}
	two := []*colInfo{{name: "a", dataType: "int"}, {name: "b", dataType: "int"}}
	// Recorded out of order (a replay appends after the later versions of an earlier run).
	v.add(position{"binlog.000010", 500}, id, two)
	v.add(position{"binlog.000009", 100}, id, one)
	v.add(position{"binlog.000010", 900}, id, nil)
	for _, tc := range []struct {
		p      position
		strict bool
		want   string
	}{
		{position{"binlog.000009", 50}, false, "none"},
		{position{"binlog.000009", 100}, false, "one"},
		{position{"binlog.000009", 100}, true, "none"},
		{position{"binlog.000009", 99999}, false, "one"},
		{position{"binlog.000010", 500}, true, "one"},
		{position{"binlog.000010", 501}, false, "two"},
		{position{"binlog.000010", 901}, false, "dropped"},
		// Sequence numbers compare as numbers past six digits.
		{position{"binlog.1000000", 1}, false, "dropped"},
	} {
		got := "none"
		if ver := v.at(id, tc.p, tc.strict); ver != nil {
			switch {
			case ver.cols == nil:
				got = "dropped"
			case len(ver.cols) == 1:
				got = "one"
			default:
				got = "two"
			}
		}
		if got != tc.want {
			t.Errorf("at %v strict=%v: %s, want %s", tc.p, tc.strict, got, tc.want)
		}
	}
	if !v.has(id, position{"binlog.000010", 500}) || v.has(id, position{"binlog.000010", 501}) {
		t.Fatal("has")
	}
	if names := v.view(position{"binlog.000010", 600}).tablesIn("src"); len(names) != 1 || names[0] != "t" {
		t.Fatalf("tablesIn: %v", names)
	}
	if names := v.view(position{"binlog.000011", 1}).tablesIn("src"); len(names) != 0 {
		t.Fatalf("tablesIn after the drop: %v", names)
	}
}

// FuzzDecodeHistory: a history record from the topic either fails to decode or gives
// table states that encode back to the same states.
func FuzzDecodeHistory(f *testing.F) {
	f.Add(encodeHistory("s", position{"binlog.000001", 4}, true, 1, "src", "", []ddlChange{{id: tableID{"src", "t"}, kind: changeCreate,
		cols: []*colInfo{{name: "id", dataType: "int", key: true}, {name: "e", dataType: "enum", members: []string{"x"}}, {name: "b", dataType: "bit", bits: 3}}}}))
	f.Add([]byte(`{"position":{"file":"f","pos":1},"tableChanges":[{"type":"DROP","id":"\"a\".\"b\""}]}`))
	f.Add([]byte(`{"position":{"file":"f"},"tableChanges":[{"type":"ALTER","id":"\"a\".\"b\"","table":{"columns":[{"name":"x","typeName":"TIME","length":3,"position":1}]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := decodeHistory(b)
		if err != nil {
			return
		}
		for _, e := range entries {
			kind := changeCreate
			if e.cols == nil {
				kind = changeDrop
			}
			again, err := decodeHistory(encodeHistory("s", e.pos, false, 0, "", "", []ddlChange{{id: e.id, kind: kind, cols: e.cols}}))
			if err != nil || len(again) != 1 || again[0].id != e.id || again[0].pos != e.pos || describeCols(again[0].cols) != describeCols(e.cols) {
				t.Fatalf("%s: %+v does not round-trip: %+v %v", b, e, again, err)
			}
		}
	})
}
