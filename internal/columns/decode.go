package columns

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// Message is what a decoder reads of one message.
type Message struct {
	Payload []byte
	// Key is the message's partition key as stored; KeyB64 says the producer base64-encoded
	// it (a KEY_VALUE schema with SEPARATED encoding puts the encoded key there).
	Key    string
	KeyB64 bool
}

// Decoder fills the wanted value columns of messages written with one schema version. It
// is not safe for concurrent use.
type Decoder struct {
	n        int
	value    payloadDecoder
	key      payloadDecoder // KEY_VALUE only
	inline   bool           // KEY_VALUE with INLINE encoding
	hasKey   bool
	hasValue bool
}

// Decoder returns a decoder that fills dst[i] with the column Columns[want[i]] of messages
// written with writer (a zero Schema: the layout's own). Columns not in want are not decoded.
func (l *Layout) Decoder(writer schema.Schema, want []int) (*Decoder, error) {
	if writer.Type == 0 && len(writer.Data) == 0 {
		writer = l.Schema
	}
	var vCols, kCols []Column
	var vSlots, kSlots []int
	for i, w := range want {
		if w < 0 || w >= len(l.Columns) {
			return nil, fmt.Errorf("columns: column %d of %d", w, len(l.Columns))
		}
		c := l.Columns[w]
		if c.key {
			kCols, kSlots = append(kCols, c), append(kSlots, i)
		} else {
			vCols, vSlots = append(vCols, c), append(vSlots, i)
		}
	}
	d := &Decoder{n: len(want), hasKey: len(kCols) > 0, hasValue: len(vCols) > 0}
	if l.kv == nil {
		if writer.Type != l.Schema.Type {
			return nil, fmt.Errorf("%w: messages of schema type %s in a %s table", ErrUnsupported, writer.Type, l.Schema.Type)
		}
		v, err := l.format.decoder(writer, vCols, vSlots)
		if err != nil {
			return nil, err
		}
		d.value = v
		return d, nil
	}
	if writer.Type != schema.KeyValue {
		return nil, fmt.Errorf("%w: messages of schema type %s in a KEY_VALUE table", ErrUnsupported, writer.Type)
	}
	wk, wv, err := schema.SplitKeyValue(writer)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	if d.key, err = l.kv.key.decoder(wk, kCols, kSlots); err != nil {
		return nil, err
	}
	if d.value, err = l.kv.value.decoder(wv, vCols, vSlots); err != nil {
		return nil, err
	}
	d.inline = !strings.EqualFold(writer.Properties["kv.encoding.type"], "SEPARATED")
	return d, nil
}

// Decode fills dst (of the length of want) from m; columns the message lacks are nil.
func (d *Decoder) Decode(m Message, dst []any) error {
	clear(dst[:d.n])
	if d.key == nil {
		if !d.hasValue {
			return nil
		}
		return d.value.decode(m.Payload, dst)
	}
	var kb, vb []byte
	if d.inline {
		var err error
		if kb, vb, err = splitInline(m.Payload); err != nil {
			return err
		}
	} else {
		vb = m.Payload
		kb = []byte(m.Key)
		if m.KeyB64 {
			b, err := base64.StdEncoding.DecodeString(m.Key)
			if err != nil {
				return fmt.Errorf("%w: base64 key: %w", ErrMalformed, err)
			}
			kb = b
		}
	}
	if d.hasKey {
		if err := d.key.decode(kb, dst); err != nil {
			return err
		}
	}
	if d.hasValue {
		return d.value.decode(vb, dst)
	}
	return nil
}

// splitInline splits an INLINE KEY_VALUE payload: [u32 key len][key][u32 value len][value].
func splitInline(p []byte) (key, value []byte, err error) {
	part := func() ([]byte, error) {
		if len(p) < 4 {
			return nil, fmt.Errorf("%w: KEY_VALUE payload truncated", ErrMalformed)
		}
		n := binary.BigEndian.Uint32(p)
		if uint64(n) > uint64(len(p)-4) {
			return nil, fmt.Errorf("%w: KEY_VALUE part of %d bytes in %d", ErrMalformed, n, len(p)-4)
		}
		b := p[4 : 4+n]
		p = p[4+n:]
		return b, nil
	}
	if key, err = part(); err != nil {
		return nil, nil, err
	}
	if value, err = part(); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// kvLayout is a KEY_VALUE schema's two formats.
type kvLayout struct{ key, value format }

func (l *Layout) keyValue() error {
	ks, vs, err := schema.SplitKeyValue(l.Schema)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	kf, kcols, err := formatOf(ks, nil)
	if err != nil {
		return err
	}
	vf, vcols, err := formatOf(vs, nil)
	if err != nil {
		return err
	}
	l.kv = &kvLayout{key: kf, value: vf}
	for i := range kcols {
		kcols[i].Name = KeyPrefix + kcols[i].Name
		kcols[i].key = true
	}
	l.setColumns(append(vcols, kcols...))
	return nil
}
