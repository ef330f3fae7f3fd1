package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/pulsar-client-go/pulsaradmin/pkg/utils"
)

// restProduce POSTs n keyless messages to url and returns the status, the Location of a
// redirect (not followed) and the acks' message ids.
func restProduce(t *testing.T, url string, n int) (int, string, []string) {
	t.Helper()
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = fmt.Sprintf(`{"payload":"m%d"}`, i)
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Post(url, "application/json", strings.NewReader(`{"messages":[`+strings.Join(msgs, ",")+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var acks struct {
		MessagePublishResults []struct {
			MessageID string `json:"messageId"`
			ErrorCode int    `json:"errorCode"`
			Error     string `json:"error"`
		} `json:"messagePublishResults"`
	}
	var ids []string
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, &acks); err != nil {
			t.Fatalf("acks %s: %v", b, err)
		}
		for _, a := range acks.MessagePublishResults {
			if a.ErrorCode != 0 || a.MessageID == "" {
				t.Fatalf("a message not published: %s", b)
			}
			ids = append(ids, a.MessageID)
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), ids
}

// TestClusterRESTProduceToPartitionedTopic: a REST produce to a partitioned topic without a
// partition publishes, as Pulsar's TopicsBase, to the partitions the receiving broker owns
// (none fails for partitions owned by the other broker), and a broker that owns none of the
// partitions redirects to one that does.
func TestClusterRESTProduceToPartitionedTopic(t *testing.T) {
	c := startClusterWith(t, 2)
	admins := clusterAdmins(t, c)
	const ns, partitions = "public/restprod", 6
	bounds := namespaceWithBundles(t, admins[0], ns, 4)
	topic := "persistent://" + ns + "/p"
	tn, _ := utils.GetTopicName(topic)
	if err := admins[0].Topics().Create(*tn, partitions); err != nil {
		t.Fatal(err)
	}
	spreadPartitions(t, c, ns, bounds, topic, partitions)
	owner := map[int]string{}
	for i := range partitions {
		owner[i] = ownerOf(t, c, fmt.Sprintf("%s-partition-%d", topic, i)).Name
	}
	for _, b := range c.Brokers {
		code, loc, ids := restProduce(t, "http://"+b.HTTP+"/topics/persistent/"+ns+"/p", 8)
		if code != 200 || len(ids) != 8 {
			t.Fatalf("REST produce via %s: %d %q %v", b.Name, code, loc, ids)
		}
		for _, id := range ids {
			parts := strings.Split(id, ":")
			p, err := strconv.Atoi(parts[len(parts)-1])
			if err != nil || owner[p] != b.Name {
				t.Fatalf("REST produce via %s published to partition %q owned by %s", b.Name, id, owner[p])
			}
		}
	}

	// One bundle, owned by the second broker: the first one redirects there.
	const ns1 = "public/restprod1"
	namespaceWithBundles(t, admins[0], ns1, 1)
	topic1 := "persistent://" + ns1 + "/q"
	tn1, _ := utils.GetTopicName(topic1)
	if err := admins[0].Topics().Create(*tn1, 2); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + c.Brokers[1].HTTP + "/lookup/v2/topic/persistent/" + ns1 + "/q-partition-0?authoritative=true")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if o := ownerOf(t, c, topic1+"-partition-1").Name; o != c.Brokers[1].Name {
		t.Fatalf("%s owns the one bundle, want %s", o, c.Brokers[1].Name)
	}
	code, loc, _ := restProduce(t, "http://"+c.Brokers[0].HTTP+"/topics/persistent/"+ns1+"/q", 3)
	if code != http.StatusTemporaryRedirect || !strings.HasPrefix(loc, "http://"+c.Brokers[1].HTTP+"/topics/persistent/"+ns1+"/q?") {
		t.Fatalf("REST produce where no partition is owned: %d %q, want 307 to %s", code, loc, c.Brokers[1].HTTP)
	}
	if code, _, ids := restProduce(t, loc, 3); code != 200 || len(ids) != 3 {
		t.Fatalf("REST produce at the redirect: %d %v", code, ids)
	}
}
