// Package framebuf reads the body of a length-prefixed frame into a buffer that grows as
// the frame's bytes arrive, never to the declared length up front.
//
// Every protocol we serve (Pulsar's, the bookie protocol, Kafka's) starts a frame with its
// length. Allocating that length before the bytes come lets a peer that declares a 5 MiB
// frame and sends ten bytes pin 5 MiB per connection (memory amplification; reliability.md,
// §3 and the broker-memory fix of issue 27). ReadFull starts at a small buffer and doubles,
// so what a frame holds is at most about twice what was received, and an honest large frame
// costs one extra copy of itself in total (the doublings sum to less than its size).
//
// The caller keeps its own maximum-frame-size check before calling; this package only
// decides how memory follows the bytes.
package framebuf
