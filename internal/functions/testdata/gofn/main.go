// gofn is the Go test function of the functions tests; userConfig "mode" picks what it does:
// exclaim (append "!"), wordcount (count words in state, output "word=count"), sum (a window
// function that outputs the sum of the window's integers), fail (error on "bad" input), crash
// (exit on "crash" input).
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/magnetar-io/magnetar/pkg/pf"
)

func mode(ctx context.Context) string {
	fc, _ := pf.FromContext(ctx)
	v, _ := fc.UserConfigValue("mode")
	s, _ := v.(string)
	return s
}

func process(ctx context.Context, in []byte) ([]byte, error) {
	fc, _ := pf.FromContext(ctx)
	if v, ok := fc.UserConfigValue("sleepMs"); ok {
		if ms, ok := v.(float64); ok {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
	}
	switch mode(ctx) {
	case "wordcount":
		var out []string
		for _, w := range strings.Fields(string(in)) {
			n, err := fc.IncrCounter(ctx, w, 1)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("%s=%d", w, n))
		}
		return []byte(strings.Join(out, " ")), nil
	case "fail":
		if string(in) == "bad" {
			return nil, errors.New("bad input")
		}
	case "crash":
		if string(in) == "crash" {
			os.Exit(3)
		}
	}
	return append(in, '!'), nil
}

func sum(ctx context.Context, w *pf.Window) ([]byte, error) {
	total := 0
	for _, r := range w.Records {
		n, err := strconv.Atoi(string(r.Payload))
		if err != nil {
			return nil, err
		}
		total += n
	}
	return []byte(strconv.Itoa(total)), nil
}

func main() {
	if os.Getenv("GOFN_WINDOW") == "1" || strings.Contains(strings.Join(os.Args, " "), "__WINDOWCONFIGS__") {
		pf.StartWindow(sum)
	}
	pf.Start(process)
}
