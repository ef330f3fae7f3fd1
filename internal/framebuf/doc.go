// Package framebuf reads the body of a length-prefixed frame into a buffer that grows as
// the frame's bytes arrive, never to the declared length up front.
//
// Every protocol we serve (Pulsar's, the bookie protocol, Kafka's) starts a frame with its
// length. Allocating that length before the bytes come lets a peer that declares a 5 MiB
// frame and sends ten bytes pin 5 MiB per connection (memory amplification; reliability.md,
// §3 and the broker-memory fix of issue 27). ReadFull reads the first half of a large frame
// into pooled 64 KiB chunks and allocates the frame's own buffer only once that half has
// arrived: a stalled peer pins at most one chunk beyond what it sent, or twice what it sent
// (three times for the moment the chunks are copied), and an honest frame costs the one
// allocation it always did plus a copy of its first half. (Doubling a buffer as the bytes
// come, what internal/wire did first, bounds memory as well but allocates up to twice the
// frame and copies it once, all of it garbage.)
//
// The caller keeps its own maximum-frame-size check before calling; this package only
// decides how memory follows the bytes.
package framebuf
