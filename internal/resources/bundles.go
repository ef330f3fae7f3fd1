package resources

import (
	"fmt"
	"hash/crc32"
	"sort"
	"strconv"
	"strings"
)

// Namespace bundles: a namespace's topics are split over bundles, ranges of the 32-bit hash
// ring of full topic names, so a cluster can spread one namespace over many brokers. The
// hash and the boundaries are Pulsar's (NamespaceBundleFactory with Guava's Hashing.crc32(),
// NamespacesBase.getBundles), so a topic lands in the bundle of the same range as in Pulsar:
//
//	hash(topic)  = CRC-32 (IEEE) of the UTF-8 full name, e.g. "persistent://public/default/t",
//	               partitions hashed by their own name ("...-partition-3")
//	n bundles    = boundaries 0x00000000, s, 2s, ..., (n-1)s, 0xffffffff with s = 2^32 / n
//	bundle i     = [boundary i, boundary i+1), the last one closed at 0xffffffff
//	bundle name  = "0x%08x_0x%08x" of its two boundaries (Pulsar's bundle range)

// DefaultNumBundles is Pulsar's defaultNumberOfNamespaceBundles.
const DefaultNumBundles = 4

// MaxNumBundles bounds a namespace's bundle count (and so the ownership keys it can have).
const MaxNumBundles = 1 << 16

// TopicHash is the position of a full topic name on the bundle hash ring.
func TopicHash(topic string) uint32 { return crc32.ChecksumIEEE([]byte(topic)) }

// WithDefaultBundles makes namespaces created without a bundles policy get n bundles
// (defaultNumberOfNamespaceBundles) and returns r.
func (r *Resources) WithDefaultBundles(n int) *Resources {
	r.numBundles = n
	return r
}

// DefaultBundles returns the boundaries of n equal bundles.
func DefaultBundles(n int) (*BundlesData, error) {
	if n < 1 || n > MaxNumBundles {
		return nil, fmt.Errorf("%w: number of bundles %d must be between 1 and %d", ErrInvalid, n, MaxNumBundles)
	}
	const ring = uint64(1) << 32
	seg := ring / uint64(n)
	b := &BundlesData{NumBundles: n, Boundaries: make([]string, 0, n+1)}
	for i := range n {
		b.Boundaries = append(b.Boundaries, fmt.Sprintf("0x%08x", uint64(i)*seg))
	}
	b.Boundaries = append(b.Boundaries, fmt.Sprintf("0x%08x", ring-1))
	return b, nil
}

// bundlesFor fills a namespace's bundles policy at creation: none given gets the default
// count, a count without boundaries gets equal bundles, given boundaries are checked.
func (r *Resources) bundlesFor(b *BundlesData) (*BundlesData, error) {
	switch {
	case b == nil:
		n := r.numBundles
		if n == 0 {
			n = DefaultNumBundles
		}
		return DefaultBundles(n)
	case len(b.Boundaries) == 0:
		return DefaultBundles(b.NumBundles)
	}
	if _, err := ParseBoundaries(b.Boundaries); err != nil {
		return nil, err
	}
	b.NumBundles = len(b.Boundaries) - 1
	return b, nil
}

// ParseBoundaries decodes bundle boundaries ("0x..." hex): at least two, strictly
// increasing, from 0x00000000 to 0xffffffff so the bundles cover the whole ring.
func ParseBoundaries(bs []string) ([]uint32, error) {
	if len(bs) < 2 || len(bs) > MaxNumBundles+1 {
		return nil, fmt.Errorf("%w: bundles need 2 to %d boundaries, got %d", ErrInvalid, MaxNumBundles+1, len(bs))
	}
	out := make([]uint32, len(bs))
	for i, s := range bs {
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X"), 16, 32)
		if err != nil || !strings.HasPrefix(strings.ToLower(s), "0x") {
			return nil, fmt.Errorf("%w: bundle boundary %q is not a 32-bit hex number (0x...)", ErrInvalid, s)
		}
		out[i] = uint32(v)
		if i > 0 && out[i] <= out[i-1] {
			return nil, fmt.Errorf("%w: bundle boundaries must increase (%s after %s)", ErrInvalid, s, bs[i-1])
		}
	}
	if out[0] != 0 || out[len(out)-1] != 0xffffffff {
		return nil, fmt.Errorf("%w: bundle boundaries must start at 0x00000000 and end at 0xffffffff", ErrInvalid)
	}
	return out, nil
}

// Bundle is one hash range of a namespace.
type Bundle struct {
	Namespace string // "tenant/ns"
	Lower     uint32 // inclusive
	Upper     uint32 // exclusive, except 0xffffffff which is inclusive
}

// Range is Pulsar's bundle range name, "0x00000000_0x40000000".
func (b Bundle) Range() string { return fmt.Sprintf("0x%08x_0x%08x", b.Lower, b.Upper) }

// String is "tenant/ns/0x..._0x...".
func (b Bundle) String() string { return b.Namespace + "/" + b.Range() }

// Contains tells whether a hash falls into the bundle.
func (b Bundle) Contains(h uint32) bool {
	return h >= b.Lower && (h < b.Upper || b.Upper == 0xffffffff)
}

// FindBundle returns the bundle of a namespace (with the given parsed boundaries) that holds
// hash h.
func FindBundle(namespace string, boundaries []uint32, h uint32) Bundle {
	// The first boundary above h ends h's bundle; 0xffffffff itself belongs to the last one.
	i := sort.Search(len(boundaries), func(i int) bool { return boundaries[i] > h })
	if i >= len(boundaries) {
		i = len(boundaries) - 1
	}
	if i == 0 {
		i = 1
	}
	return Bundle{Namespace: namespace, Lower: boundaries[i-1], Upper: boundaries[i]}
}
