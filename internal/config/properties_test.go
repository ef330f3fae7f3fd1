package config

import (
	"reflect"
	"strings"
	"testing"
)

func TestReadFileJavaProperties(t *testing.T) {
	body := "# comment\n" +
		"  ! also a comment\n" +
		"\n" +
		"plain=value\n" +
		"spaced = value with  inner spaces   \n" +
		"colon: v\n" +
		"blank value\n" +
		"empty=\n" +
		"json={\"tlsCertFile\":\"/pulsar/certs/client-cert.pem\",\"x\":1}\n" +
		"list=a,\\\n" +
		"     b,\\\n" +
		"     c\n" +
		"esc\\=aped\\:key=tab\\there\\u0041\\\\\n" +
		"firstSep=a=b:c\n"
	got, err := ReadFile(writeFile(t, body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{"plain", "value", 4, ""},
		{"spaced", "value with  inner spaces", 5, ""},
		{"colon", "v", 6, ""},
		{"blank", "value", 7, ""},
		{"empty", "", 8, ""},
		{"json", `{"tlsCertFile":"/pulsar/certs/client-cert.pem","x":1}`, 9, ""},
		{"list", "a,b,c", 10, ""},
		{"esc=aped:key", "tab\there" + "A\\", 13, ""},
		{"firstSep", "a=b:c", 14, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestReadFileBadEscape(t *testing.T) {
	if _, err := ReadFile(writeFile(t, "a=\\u00zz\n")); err == nil {
		t.Fatal("malformed \\u escape accepted")
	}
}

func FuzzReadFile(f *testing.F) {
	f.Add("a=b\nc: d\\\n e\n# x\n")
	f.Add("k\\u0041=\\t\\\\\n")
	f.Fuzz(func(t *testing.T, body string) {
		entries, err := parseProperties(strings.NewReader(body), "fuzz")
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Key == "" || e.Line < 1 {
				t.Fatalf("bad entry %+v", e)
			}
		}
	})
}
