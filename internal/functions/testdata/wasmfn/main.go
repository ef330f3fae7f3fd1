//go:build wasip1

// wasmfn is the WASM test function; userConfig "mode": exclaim, wordcount, spin (loop
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

func init() { pfwasm.Handle(process) }

func main() {}
