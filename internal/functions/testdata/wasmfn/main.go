//go:build wasip1

// wasmfn is the WASM test function; userConfig "mode": exclaim, wordcount, api (every
// other host import: state, counters, the current record, publish, log), spin (loop
// forever on "spin": the time budget must stop it), grow (allocate without bound on "grow":
// the memory limit must stop it).
package main

import (
	"fmt"
	"strings"

	"github.com/magnetar-io/magnetar/pkg/pfwasm"
)

var hog [][]byte

func process(c *pfwasm.Context, in []byte) ([]byte, error) {
	var mode string
	c.UserConfigValue("mode", &mode)
	switch {
	case mode == "api":
		return api(c, in)
	case mode == "wordcount":
		var out []string
		for _, w := range strings.Fields(string(in)) {
			n, err := c.IncrCounter(w, 1)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("%s=%d", w, n))
		}
		return []byte(strings.Join(out, " ")), nil
	case string(in) == "spin":
		for {
		}
	case string(in) == "grow":
		for {
			hog = append(hog, make([]byte, 1<<20))
		}
	}
	return append(in, '!'), nil
}

// api goes through every host import besides user_config and counter_incr and reports
// what each returned, in one line.
func api(c *pfwasm.Context, in []byte) ([]byte, error) {
	key := "s-" + string(in)
	if err := c.PutState(key, append([]byte("v-"), in...)); err != nil {
		return nil, err
	}
	got, err := c.GetState(key)
	if err != nil {
		return nil, err
	}
	delErr := c.DeleteState(key)
	_, afterDel := c.GetState(key)
	if _, err := c.IncrCounter("n", 3); err != nil {
		return nil, err
	}
	n, err := c.GetCounter("n")
	if err != nil {
		return nil, err
	}
	var to string
	c.UserConfigValue("publishTo", &to)
	if err := c.Publish(to, append([]byte("side-"), in...)); err != nil {
		return nil, err
	}
	c.Log(0, "api record "+string(in))
	return fmt.Appendf(nil, "%s got=%s del=%v after=%v again=%v n=%d key=%s topic=%t id=%t", in, got, delErr,
		afterDel == pfwasm.ErrNoState, c.DeleteState(key) == pfwasm.ErrNoState, n, c.Key(),
		strings.HasSuffix(c.Topic(), "wasm-api-in"), c.MessageID() != ""), nil
}

func init() { pfwasm.Handle(process) }

func main() {}
