package bookie

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/magnetar-io/magnetar/internal/metadata"
	"github.com/magnetar-io/magnetar/internal/metadata/memstore"
	"github.com/magnetar-io/magnetar/internal/resources"
)

type fixedIdentity struct{ id string }

func (f fixedIdentity) InstanceID() string { return f.id }
func (f fixedIdentity) NewInstance() bool  { return false }

// FuzzCookieRecord checks a bookie against a cluster-wide cookie of the fuzzer's bytes.
// The check never panics and passes only for a cookie naming this very instance; anything
// else, unreadable JSON included, is ErrCookieMismatch (refused, not trusted).
func FuzzCookieRecord(f *testing.F) {
	f.Add([]byte(`{"address":"a:1","instanceId":"me","createdMillis":1}`))
	f.Add([]byte(`{"address":"a:1","instanceId":"other"}`))
	f.Add([]byte(`{"instanceId":""}`))
	f.Add([]byte(`{`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, value []byte) {
		st := memstore.New(memstore.DefaultOptions())
		defer st.Close()
		ctx := context.Background()
		if _, err := st.Put(ctx, cookieKey("a:1"), value, metadata.NotExists); err != nil {
			t.Fatal(err)
		}
		err := verifyCookie(ctx, st, "a:1", fixedIdentity{"me"}, "/j", "/l")
		var c resources.BookieCookie
		matches := json.Unmarshal(value, &c) == nil && c.InstanceID == "me"
		switch {
		case matches && err != nil:
			t.Fatalf("a cookie of this instance refused: %v", err)
		case !matches && !errors.Is(err, ErrCookieMismatch):
			t.Fatalf("cookie %q accepted or not refused as a mismatch: %v", value, err)
		}
	})
}
