package lakehouse

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// rawOCF builds an object container file by hand: header entries, then one block of count
// values whose bytes are data, compressed with codec ("null" or "deflate").
func rawOCF(schema, codec string, count int64, data []byte) []byte {
	b := ocfHeader(schema, codec)
	if codec == "deflate" {
		var z bytes.Buffer
		w, _ := flate.NewWriter(&z, flate.BestCompression)
		_, _ = w.Write(data)
		_ = w.Close()
		data = z.Bytes()
	}
	b = binary.AppendVarint(b, count)
	b = binary.AppendVarint(b, int64(len(data)))
	b = append(b, data...)
	return append(b, testSync...)
}

var testSync = bytes.Repeat([]byte{0xA5}, 16)

// ocfHeader is a container file's header (its sync marker testSync).
func ocfHeader(schema, codec string) []byte {
	b := append([]byte(nil), avroMagic...)
	b = binary.AppendVarint(b, 2)
	for _, kv := range [][2]string{{"avro.schema", schema}, {"avro.codec", codec}} {
		b = binary.AppendVarint(b, int64(len(kv[0])))
		b = append(b, kv[0]...)
		b = binary.AppendVarint(b, int64(len(kv[1])))
		b = append(b, kv[1]...)
	}
	b = append(b, 0)
	return append(b, testSync...)
}

// A manifest list row of our schema with one more field, junk, that the reader skips.
const junkListSchema = `{"type":"record","name":"manifest_file","fields":[
{"name":"manifest_path","type":"string"},{"name":"junk","type":{"type":"array","items":{"type":"record","name":"empty","fields":[]}}}]}`

// badAvroFiles are corrupt files whose lengths and counts, taken as they stand, allocate
// gigabytes or loop for ever; each must be an error.
func badAvroFiles() map[string][]byte {
	varint := func(vs ...int64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendVarint(b, v)
		}
		return b
	}
	return map[string][]byte{
		// As the fuzzer's input 1cefada9941c1947: ocf.Decoder made a slice of the size.
		"block of 6 GB": append(append(ocfHeader(junkListSchema, "null"), varint(1, 6<<30)...), 'x'),
		// hamba/avro's skipping of junk would turn 2^60 times over nothing.
		"skipped array of 2^60 empty records": rawOCF(junkListSchema, "null", 1, append(append(varint(1), 'm'), varint(1<<60, 0)...)),
		"negative array block size":           rawOCF(junkListSchema, "null", 1, append(append(varint(1), 'm'), varint(-1, -5, 0)...)),
		"2^40 rows in a block":                rawOCF(junkListSchema, "null", 1<<40, append(varint(1), 'm', 0)),
		"string of 2^40 bytes":                rawOCF(junkListSchema, "null", 1, append(varint(1<<40), 'm', 0)),
		"deflate bomb":                        rawOCF(junkListSchema, "deflate", 1, make([]byte, maxAvroBlock+1)),
		"header of 2^50 entries":              append(append(bytes.Clone(avroMagic), varint(1<<50)...), "xy"...),
		"unknown codec":                       rawOCF(junkListSchema, "lzma", 1, append(varint(1), 'm', 0)),
		"trailing bytes":                      rawOCF(junkListSchema, "null", 1, append(varint(1), 'm', 0, 0)),
	}
}

// TestAvroFileBounds: a well-formed file with a field the reader skips decodes; every
// corrupt length or count is an errManifest (not an allocation of the declared size, not a
// loop of the declared count: the test would run out of memory or time first).
func TestAvroFileBounds(t *testing.T) {
	good := rawOCF(junkListSchema, "deflate", 1, []byte{2, 'm', 3, 0, 0}) // junk: a block of 2 empty records
	files, err := decodeManifestList(good)
	if err != nil || len(files) != 1 || files[0].Path != "m" {
		t.Fatalf("good file: %+v, %v", files, err)
	}
	for name, b := range badAvroFiles() {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			files, err := decodeManifestList(b)
			if !errors.Is(err, errManifest) {
				t.Fatalf("got %d rows, error %v; want errManifest", len(files), err)
			}
		})
	}
}
