package functions_test

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// TestGoPerInputSchema runs a Go function with two inputs of different schema types
// (inputSpecs STRING and, through customSchemaInputs, INT64): each input's consumer
// subscribes with its own type, so each topic gets that schema registered, a producer of
// the other type is refused on it, and messages of both reach the function.
func TestGoPerInputSchema(t *testing.T) {
	admin := adminClient(t)
	client := pulsarClient(t)
	inS, inI, out := "persistent://public/default/schema-in-str", "persistent://public/default/schema-in-int", "persistent://public/default/schema-out"
	cfg := &utils.FunctionConfig{
		Tenant: "public", Namespace: "default", Name: "schemas", Output: out,
		InputSpecs:         map[string]utils.ConsumerConfig{inS: {SchemaType: "STRING"}},
		CustomSchemaInputs: map[string]string{inI: "INT64"},
		Go:                 strp(goFunction(t)), Parallelism: 1, SubscriptionPosition: "Earliest",
		UserConfig: map[string]any{"mode": "exclaim"},
	}
	if err := admin.Functions().CreateFunc(cfg, goFunction(t)); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = admin.Functions().DeleteFunction("public", "default", "schemas") }()
	waitRunning(t, admin, "schemas", 1)
	for topic, want := range map[string]string{inS: "STRING", inI: "INT64"} {
		waitFor(t, topic+" schema "+want, func() (bool, error) {
			info, err := admin.Schemas().GetSchemaInfo(topic)
			if err != nil {
				return false, err
			}
			return info.Type == want, fmt.Errorf("schema %+v", info)
		})
	}
	ps, err := client.CreateProducer(pulsar.ProducerOptions{Topic: inS, Schema: pulsar.NewStringSchema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	pi, err := client.CreateProducer(pulsar.ProducerOptions{Topic: inI, Schema: pulsar.NewInt64Schema(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer pi.Close()
	if _, err := ps.Send(context.Background(), &pulsar.ProducerMessage{Value: "s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := pi.Send(context.Background(), &pulsar.ProducerMessage{Value: int64(7)}); err != nil {
		t.Fatal(err)
	}
	if wrong, err := client.CreateProducer(pulsar.ProducerOptions{Topic: inI, Schema: pulsar.NewStringSchema(nil)}); err == nil {
		wrong.Close()
		t.Fatal("a STRING producer was accepted on the INT64 input")
	}
	got := consumeN(t, client, out, 2)
	sort.Strings(got)
	seven, err := pulsar.NewInt64Schema(nil).Encode(int64(7)) // the Go client's encoding of it
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{string(seven) + "!", "s!"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("output %q, want %q", got, want)
	}
}
