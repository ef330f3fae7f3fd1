package offload

import "time"

func waitTick() <-chan time.Time { return time.After(10 * time.Millisecond) }
