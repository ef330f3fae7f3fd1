package functions

import (
	"testing"

	"github.com/magnetar-io/magnetar/pkg/pf"
)

// FuzzFunctionConfig feeds arbitrary functionConfig documents through decoding and
// validation: every outcome is a value or an error, never a panic.
func FuzzFunctionConfig(f *testing.F) {
	f.Add([]byte(`{"inputs":["a"],"output":"b","go":"x","parallelism":2}`))
	f.Add([]byte(`{"topicsPattern":"public/default/.*","py":"f.py","className":"m.C","processingGuarantees":"EFFECTIVELY_ONCE"}`))
	f.Add([]byte(`{"inputs":["a"],"windowConfig":{"windowLengthCount":3,"slidingIntervalCount":5}}`))
	f.Add([]byte(`{"inputs":["persistent://t/n"],"secrets":{"s":1},"maxMessageRetries":-1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeConfig(b)
		if err != nil {
			return
		}
		_ = c.normalize("public", "default", "f", limits{maxParallelism: 8})
	})
}

// FuzzInstanceConf feeds arbitrary -instance-conf documents to the SDK's parser.
func FuzzInstanceConf(f *testing.F) {
	f.Add(`{"pulsarServiceURL":"pulsar://h:1","tenant":"t","nameSpace":"n","name":"f","sourceSpecsTopic":"a"}`)
	f.Add(`{"userConfig":"{\"__WINDOWCONFIGS__\":{\"windowLengthCount\":2}}","sourceInputSpecs":{"a":"{bad"}}`)
	f.Fuzz(func(t *testing.T, s string) {
		c, err := pf.ParseConf([]string{"-instance-conf", s})
		if err == nil {
			_, _ = pf.NewInstance(c, func([]byte) []byte { return nil }, pf.Options{})
		}
	})
}
