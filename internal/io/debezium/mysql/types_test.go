package mysql

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/magnetar-io/magnetar/internal/io/debezium"
)

func col(dataType, columnType string, precision int) *colInfo {
	c := &colInfo{name: "c", dataType: dataType, precision: precision}
	c.parseColumnType(columnType)
	c.classify("string")
	return c
}

// TestConvert checks that a binlog value and the snapshot's text give the same event value.
func TestConvert(t *testing.T) {
	for _, tc := range []struct {
		c       *colInfo
		binlog  any
		text    string
		want    any
		logical string
	}{
		{col("int", "int(11)", 0), int32(-5), "-5", int64(-5), ""},
		{col("int", "int(10) unsigned", 0), int32(-1), "4294967295", int64(4294967295), ""},
		{col("tinyint", "tinyint(3) unsigned", 0), int8(-1), "255", int64(255), ""},
		{col("mediumint", "mediumint(8) unsigned", 0), int32(-1), "16777215", int64(16777215), ""},
		{col("bigint", "bigint(20) unsigned", 0), int64(-1), "18446744073709551615", json.Number("18446744073709551615"), ""},
		{col("enum", "enum('a','b''c')", 0), int64(2), "b'c", "b'c", "io.debezium.data.Enum"},
		{col("set", "set('x','y','z')", 0), int64(5), "x,z", "x,z", "io.debezium.data.EnumSet"},
		{col("bit", "bit(1)", 0), int64(1), "\x01", true, ""},
		{col("bit", "bit(12)", 0), int64(0x123), "\x01\x23", int64(0x123), ""},
		{col("date", "date", 0), "1970-01-03", "1970-01-03", int64(2), debezium.Date},
		{col("datetime", "datetime(3)", 3), "1970-01-01 00:00:01.5", "1970-01-01 00:00:01.500", int64(1500), debezium.Timestamp},
		{col("datetime", "datetime(6)", 6), "1970-01-01 00:00:01.000002", "1970-01-01 00:00:01.000002", int64(1000002), debezium.MicroTimestamp},
		{col("time", "time(3)", 3), "-01:00:00.250", "-01:00:00.250", int64(-3600250000), debezium.MicroTime},
		{col("timestamp", "timestamp(3)", 3), "2024-05-01 01:02:03.400", "2024-05-01 01:02:03.400", "2024-05-01T01:02:03.4Z", debezium.ZonedTimestamp},
		{col("decimal", "decimal(10,2)", 0), "12.30", "12.30", "12.30", ""},
		{col("varbinary", "varbinary(4)", 0), []byte{0, 1}, "\x00\x01", []byte{0, 1}, ""},
	} {
		name := tc.c.dataType + "/" + fmt.Sprint(tc.binlog)
		if tc.c.logical != tc.logical {
			t.Errorf("%s: logical %q, want %q", name, tc.c.logical, tc.logical)
		}
		text, null := tc.c.fromBinlog(tc.binlog)
		if null {
			t.Fatalf("%s: null", name)
		}
		fromBinlog, err := tc.c.convert(text)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		fromText, err := tc.c.convert([]byte(tc.text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprintf("%#v", fromBinlog) != fmt.Sprintf("%#v", tc.want) || fmt.Sprintf("%#v", fromText) != fmt.Sprintf("%#v", tc.want) {
			t.Errorf("%s: binlog gives %#v, text %#v, want %#v", name, fromBinlog, fromText, tc.want)
		}
	}
	if _, err := col("time", "time", 0).convert([]byte("nonsense")); err == nil {
		t.Error("a bad time converted")
	}
	if v, err := col("date", "date", 0).convert([]byte("0000-00-00")); err != nil || v != nil {
		t.Errorf("zero date: %v %v", v, err)
	}
}

func FuzzSplitQuoted(f *testing.F) {
	f.Add("'a','b''c'")
	f.Add("'")
	f.Fuzz(func(t *testing.T, s string) {
		_ = splitQuoted(s)
		c := &colInfo{dataType: "enum"}
		c.parseColumnType("enum(" + s + ")")
		c.parseColumnType(s)
	})
}
