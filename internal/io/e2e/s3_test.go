package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/hamba/avro/v2/ocf"
	"github.com/parquet-go/parquet-go"

	"github.com/magnetar-io/magnetar/internal/io/objstore"
	"github.com/magnetar-io/magnetar/internal/testenv"
)

// TestS3Sink writes one topic to an S3-compatible server (internal/testenv) four times, as
// JSON-lines, Parquet, Avro and bytes objects under date directories; reading every object
// back must give every message once, with its key and properties (bytes: values only).
func TestS3Sink(t *testing.T) {
	srv := testenv.StartS3(t)
	srv.CreateBucket(t, "lake")
	a := admin(t)
	topic := "persistent://public/default/to-s3"
	for _, f := range []string{"json", "parquet", "avro", "bytes"} {
		sink := &utils.SinkConfig{Tenant: "public", Namespace: "default", Name: "s3-" + f, Archive: "builtin://s3",
			Inputs: []string{topic}, Parallelism: 1, SourceSubscriptionPosition: "Earliest",
			Configs: map[string]any{"bucket": "lake", "endpoint": srv.Endpoint, "region": srv.Region, "accessKeyId": srv.AccessKey,
				"secretAccessKey": srv.SecretKey, "pathPrefix": f, "formatType": f, "batchSize": 40, "batchTimeMs": 200}}
		if err := a.Sinks().CreateSink(sink, sink.Archive); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = a.Sinks().DeleteSink("public", "default", sink.Name) }()
	}
	p, err := client(t).CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hangLimit)
	defer cancel()
	const n = 100
	for i := 0; i < n; i++ {
		v := []byte(fmt.Sprintf(`{"n":%d}`, i))
		if i%10 == 0 {
			v = []byte{0xff, byte(i)} // binary
		}
		p.SendAsync(ctx, &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", i), Payload: v, Properties: map[string]string{"i": fmt.Sprint(i)}}, func(_ pulsar.MessageID, _ *pulsar.ProducerMessage, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	if err := p.Flush(); err != nil {
		t.Fatal(err)
	}
	date := time.Now().UTC().Format("2006-01-02")
	read := func(key string) []byte {
		out, err := srv.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("lake"), Key: aws.String(key)})
		if err != nil {
			t.Fatal(err)
		}
		defer out.Body.Close()
		b, _ := io.ReadAll(out.Body)
		return b
	}
	collect := func(format string) (map[string]string, error) {
		got := map[string]string{}
		for _, k := range srv.Keys(t, "lake") {
			if !strings.HasPrefix(k, format+"/public/default/to-s3/") {
				continue
			}
			if !strings.Contains(k, "/"+date+"/") && !strings.Contains(k, "/"+time.Now().Add(-time.Hour).UTC().Format("2006-01-02")+"/") {
				return nil, fmt.Errorf("object %s is not under a date directory", k)
			}
			b := read(k)
			if format == "json" {
				sc := bufio.NewScanner(bytes.NewReader(b))
				for sc.Scan() {
					var row struct {
						Key        string            `json:"key"`
						Value      json.RawMessage   `json:"value"`
						Properties map[string]string `json:"properties"`
					}
					if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
						return nil, fmt.Errorf("%s: %v", k, err)
					}
					got[row.Key] = string(row.Value) + "/" + row.Properties["i"]
				}
				continue
			}
			switch format {
			case "avro":
				if !strings.HasSuffix(k, ".avro") {
					return nil, fmt.Errorf("avro object %s", k)
				}
				dec, err := ocf.NewDecoder(bytes.NewReader(b))
				if err != nil {
					return nil, fmt.Errorf("%s: %v", k, err)
				}
				for dec.HasNext() {
					var r objstore.AvroRow
					if err := dec.Decode(&r); err != nil {
						return nil, fmt.Errorf("%s: %v", k, err)
					}
					if r.Key == nil {
						return nil, fmt.Errorf("%s: a record without its key", k)
					}
					got[*r.Key] = string(r.Value) + "/" + r.Properties["i"]
				}
				if dec.Error() != nil {
					return nil, fmt.Errorf("%s: %v", k, dec.Error())
				}
				continue
			case "bytes":
				// Values only, 0x10 between them: keyed here by value.
				if !strings.HasSuffix(k, ".raw") {
					return nil, fmt.Errorf("bytes object %s", k)
				}
				for _, v := range bytes.Split(b, []byte{0x10}) {
					got[string(v)] += "+"
				}
				continue
			}
			rows, err := parquet.Read[objstore.Row](bytes.NewReader(b), int64(len(b)))
			if err != nil {
				return nil, fmt.Errorf("%s: %v", k, err)
			}
			for _, r := range rows {
				var props map[string]string
				_ = json.Unmarshal([]byte(r.Properties), &props)
				got[r.Key] = string(r.Value) + "/" + props["i"]
			}
		}
		return got, nil
	}
	for _, f := range []string{"json", "parquet", "avro", "bytes"} {
		var got map[string]string
		eventually(t, "every message in "+f+" objects", func() (bool, error) {
			var err error
			got, err = collect(f)
			return err == nil && len(got) == n, fmt.Errorf("%d messages, %v; objects %v", len(got), err, srv.Keys(t, "lake"))
		})
		if f == "bytes" {
			for i := 0; i < n; i++ {
				v := fmt.Sprintf(`{"n":%d}`, i)
				if i%10 == 0 {
					v = string([]byte{0xff, byte(i)})
				}
				if got[v] != "+" {
					t.Fatalf("bytes: value %q seen %q times", v, got[v])
				}
			}
			continue
		}
		for i := 0; i < n; i++ {
			want := fmt.Sprintf(`{"n":%d}/%d`, i, i)
			if i%10 == 0 {
				bin := []byte{0xff, byte(i)}
				want = string(bin) + "/" + fmt.Sprint(i) // Parquet and Avro: the bytes
				if f == "json" {
					want = `"` + base64.StdEncoding.EncodeToString(bin) + `"/` + fmt.Sprint(i) // JSON: base64
				}
			}
			if got[fmt.Sprintf("k%d", i)] != want {
				t.Fatalf("%s k%d = %q, want %q", f, i, got[fmt.Sprintf("k%d", i)], want)
			}
		}
	}
}
