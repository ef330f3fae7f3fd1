package columns

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/magnetar-io/magnetar/internal/schema"
)

// PROTOBUF_NATIVE schema data is Pulsar's ProtobufNativeSchemaData JSON: a base64
// FileDescriptorSet, the root file's name and the root message's full name. Payloads are
// walked field by field with protowire: unwanted fields are skipped by their wire length;
// wanted scalars are read in place; repeated fields and maps (JSON columns) are the one case
// that unmarshals the message into a dynamic message to render them.
type protoFormat struct {
	root protoreflect.MessageDescriptor
}

const timestampName = "google.protobuf.Timestamp"

func parseProtoRoot(data []byte) (protoreflect.MessageDescriptor, error) {
	var d struct {
		FileDescriptorSet   []byte `json:"fileDescriptorSet"`
		RootMessageTypeName string `json:"rootMessageTypeName"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%w: PROTOBUF_NATIVE schema data: %w", ErrUnsupported, err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(d.FileDescriptorSet, &set); err != nil {
		return nil, fmt.Errorf("%w: PROTOBUF_NATIVE descriptor set: %w", ErrUnsupported, err)
	}
	files, err := protodesc.FileOptions{AllowUnresolvable: true}.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("%w: PROTOBUF_NATIVE descriptor set: %w", ErrUnsupported, err)
	}
	desc, err := files.FindDescriptorByName(protoreflect.FullName(d.RootMessageTypeName))
	if err != nil {
		return nil, fmt.Errorf("%w: PROTOBUF_NATIVE root message %q: %w", ErrUnsupported, d.RootMessageTypeName, err)
	}
	md, ok := desc.(protoreflect.MessageDescriptor)
	if !ok {
		return nil, fmt.Errorf("%w: PROTOBUF_NATIVE root %q is not a message", ErrUnsupported, d.RootMessageTypeName)
	}
	return md, nil
}

func newProtoFormat(data []byte) (format, []Column, error) {
	md, err := parseProtoRoot(data)
	if err != nil {
		return nil, nil, err
	}
	var cols []Column
	protoColumns(md, nil, 0, &cols)
	return &protoFormat{root: md}, cols, nil
}

func protoColumns(md protoreflect.MessageDescriptor, path []string, depth int, out *[]Column) {
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		p := append(append([]string(nil), path...), string(fd.Name()))
		if fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() &&
			fd.Message().FullName() != timestampName && depth+1 < MaxDepth {
			protoColumns(fd.Message(), p, depth+1, out)
			continue
		}
		*out = append(*out, Column{Name: strings.Join(p, "."), Kind: protoKind(fd), Nullable: true, path: p})
	}
}

func protoKind(fd protoreflect.FieldDescriptor) Kind {
	if fd.IsList() || fd.IsMap() {
		return JSON
	}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return Bool
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return Int32
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Int64Kind, protoreflect.Sint64Kind,
		protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return Int64
	case protoreflect.FloatKind:
		return Float32
	case protoreflect.DoubleKind:
		return Float64
	case protoreflect.StringKind, protoreflect.EnumKind:
		return String
	case protoreflect.BytesKind:
		return Bytes
	case protoreflect.MessageKind, protoreflect.GroupKind:
		if fd.Message().FullName() == timestampName {
			return Timestamp
		}
	}
	return JSON
}

// protoPlan is what to do with each field number of one message.
type protoPlan struct {
	md    protoreflect.MessageDescriptor
	ops   map[protowire.Number]*protoOp
	json  []*protoOp // JSON leaves: rendered from a dynamic message
	zeros []*protoOp // scalar leaves without presence: zero unless set
}

type protoOp struct {
	fd   protoreflect.FieldDescriptor
	slot int
	col  Column
	sub  *protoPlan
}

func (f *protoFormat) decoder(writer schema.Schema, cols []Column, slots []int) (payloadDecoder, error) {
	md := f.root
	if len(writer.Data) > 0 {
		w, err := parseProtoRoot(writer.Data)
		if err != nil {
			return nil, err
		}
		md = w
	}
	return &protoDecoder{plan: compileProto(md, wantTree(cols, slots))}, nil
}

func compileProto(md protoreflect.MessageDescriptor, tree *want) *protoPlan {
	p := &protoPlan{md: md, ops: map[protowire.Number]*protoOp{}}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		name := string(fd.Name())
		if lw, ok := tree.leaf[name]; ok {
			op := &protoOp{fd: fd, slot: lw.slot, col: lw.col}
			switch {
			case lw.col.Kind == JSON || fd.IsList() || fd.IsMap():
				p.json = append(p.json, op)
			default:
				p.ops[fd.Number()] = op
				if !fd.HasPresence() {
					p.zeros = append(p.zeros, op)
				}
			}
			continue
		}
		if sub := tree.sub[name]; sub != nil && fd.Kind() == protoreflect.MessageKind && !fd.IsList() && !fd.IsMap() {
			p.ops[fd.Number()] = &protoOp{fd: fd, sub: compileProto(fd.Message(), sub)}
		}
	}
	return p
}

type protoDecoder struct{ plan *protoPlan }

func (d *protoDecoder) decode(payload []byte, dst []any) error {
	return decodeProto(d.plan, payload, dst, 0)
}

func protoErr(what string, n int) error {
	return fmt.Errorf("%w: protobuf %s: %w", ErrMalformed, what, protowire.ParseError(n))
}

func decodeProto(p *protoPlan, b []byte, dst []any, depth int) error {
	if depth > maxNesting {
		return fmt.Errorf("%w: protobuf nesting", ErrMalformed)
	}
	for _, op := range p.zeros {
		dst[op.slot] = coerce(protoZero(op.fd), op.col)
	}
	if len(p.json) > 0 {
		m := dynamicpb.NewMessage(p.md)
		if err := (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, m); err != nil {
			return fmt.Errorf("%w: protobuf: %w", ErrMalformed, err)
		}
		for _, op := range p.json {
			if !m.Has(op.fd) && op.fd.HasPresence() {
				continue
			}
			s, err := protoJSON(op.fd, m.Get(op.fd))
			if err != nil {
				return err
			}
			dst[op.slot] = s
		}
	}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protoErr("tag", n)
		}
		b = b[n:]
		op := p.ops[num]
		if op == nil {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return protoErr("field value", m)
			}
			b = b[m:]
			continue
		}
		if op.sub != nil {
			if typ != protowire.BytesType {
				return fmt.Errorf("%w: protobuf field %s: wire type %d for a message", ErrMalformed, op.fd.Name(), typ)
			}
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return protoErr("message field", m)
			}
			if err := decodeProto(op.sub, v, dst, depth+1); err != nil {
				return err
			}
			b = b[m:]
			continue
		}
		v, m, err := protoScalar(op.fd, typ, b)
		if err != nil {
			return err
		}
		dst[op.slot] = coerce(v, op.col)
		b = b[m:]
	}
	return nil
}

func protoZero(fd protoreflect.FieldDescriptor) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return false
	case protoreflect.StringKind:
		return ""
	case protoreflect.BytesKind:
		return []byte{}
	case protoreflect.FloatKind:
		return float32(0)
	case protoreflect.DoubleKind:
		return float64(0)
	case protoreflect.EnumKind:
		if v := fd.Enum().Values().ByNumber(0); v != nil {
			return string(v.Name())
		}
		return "0"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return int32(0)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return nil
	}
	return int64(0)
}

// protoScalar reads one non-repeated field value of the wire type typ.
func protoScalar(fd protoreflect.FieldDescriptor, typ protowire.Type, b []byte) (any, int, error) {
	bad := func() (any, int, error) {
		return nil, 0, fmt.Errorf("%w: protobuf field %s: wire type %d for %s", ErrMalformed, fd.Name(), typ, fd.Kind())
	}
	switch typ {
	case protowire.VarintType:
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, 0, protoErr("varint", n)
		}
		switch fd.Kind() {
		case protoreflect.BoolKind:
			return v != 0, n, nil
		case protoreflect.Int32Kind:
			return int32(v), n, nil
		case protoreflect.Sint32Kind:
			return int32(protowire.DecodeZigZag(v & math.MaxUint32)), n, nil
		case protoreflect.Uint32Kind:
			return int64(uint32(v)), n, nil
		case protoreflect.Int64Kind, protoreflect.Uint64Kind:
			return int64(v), n, nil
		case protoreflect.Sint64Kind:
			return protowire.DecodeZigZag(v), n, nil
		case protoreflect.EnumKind:
			if ev := fd.Enum().Values().ByNumber(protoreflect.EnumNumber(int32(v))); ev != nil {
				return string(ev.Name()), n, nil
			}
			return strconv.FormatInt(int64(int32(v)), 10), n, nil
		}
	case protowire.Fixed32Type:
		v, n := protowire.ConsumeFixed32(b)
		if n < 0 {
			return nil, 0, protoErr("fixed32", n)
		}
		switch fd.Kind() {
		case protoreflect.Sfixed32Kind:
			return int32(v), n, nil
		case protoreflect.Fixed32Kind:
			return int64(v), n, nil
		case protoreflect.FloatKind:
			return math.Float32frombits(v), n, nil
		}
	case protowire.Fixed64Type:
		v, n := protowire.ConsumeFixed64(b)
		if n < 0 {
			return nil, 0, protoErr("fixed64", n)
		}
		switch fd.Kind() {
		case protoreflect.Sfixed64Kind, protoreflect.Fixed64Kind:
			return int64(v), n, nil
		case protoreflect.DoubleKind:
			return math.Float64frombits(v), n, nil
		}
	case protowire.BytesType:
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return nil, 0, protoErr("length-delimited", n)
		}
		switch fd.Kind() {
		case protoreflect.StringKind:
			return string(v), n, nil
		case protoreflect.BytesKind:
			return append([]byte(nil), v...), n, nil
		case protoreflect.MessageKind:
			if fd.Message().FullName() == timestampName {
				t, err := protoTimestamp(v)
				return t, n, err
			}
		}
	}
	return bad()
}

// protoTimestamp reads a google.protobuf.Timestamp (seconds = 1, nanos = 2).
func protoTimestamp(b []byte) (time.Time, error) {
	var secs, nanos int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return time.Time{}, protoErr("Timestamp tag", n)
		}
		b = b[n:]
		if typ != protowire.VarintType {
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return time.Time{}, protoErr("Timestamp field", m)
			}
			b = b[m:]
			continue
		}
		v, m := protowire.ConsumeVarint(b)
		if m < 0 {
			return time.Time{}, protoErr("Timestamp varint", m)
		}
		switch num {
		case 1:
			secs = int64(v)
		case 2:
			nanos = int64(int32(v))
		}
		b = b[m:]
	}
	return time.Unix(secs, nanos).UTC(), nil
}

// protoJSON renders a field's value (list, map, message or scalar) as JSON text.
func protoJSON(fd protoreflect.FieldDescriptor, v protoreflect.Value) (string, error) {
	var out []byte
	var err error
	switch {
	case fd.IsList():
		l := v.List()
		out = append(out, '[')
		for i := 0; i < l.Len(); i++ {
			if i > 0 {
				out = append(out, ',')
			}
			if out, err = appendProtoValue(out, fd, l.Get(i)); err != nil {
				return "", err
			}
		}
		out = append(out, ']')
	case fd.IsMap():
		out = append(out, '{')
		first := true
		var ferr error
		v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
			if !first {
				out = append(out, ',')
			}
			first = false
			out = appendJSONString(out, k.String())
			out = append(out, ':')
			out, ferr = appendProtoValue(out, fd.MapValue(), mv)
			return ferr == nil
		})
		if ferr != nil {
			return "", ferr
		}
		out = append(out, '}')
	default:
		if out, err = appendProtoValue(out, fd, v); err != nil {
			return "", err
		}
	}
	return string(out), nil
}

func appendProtoValue(dst []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		b, err := protojson.Marshal(v.Message().Interface())
		if err != nil {
			return nil, fmt.Errorf("%w: protobuf %s: %w", ErrMalformed, fd.Name(), err)
		}
		return append(dst, b...), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return appendJSONString(dst, string(ev.Name())), nil
		}
		return strconv.AppendInt(dst, int64(v.Enum()), 10), nil
	case protoreflect.BytesKind:
		return appendJSONString(dst, base64.StdEncoding.EncodeToString(v.Bytes())), nil
	case protoreflect.StringKind:
		return appendJSONString(dst, v.String()), nil
	case protoreflect.BoolKind:
		return strconv.AppendBool(dst, v.Bool()), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return appendJSONFloat(dst, v.Float(), 64), nil
	case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	}
	return strconv.AppendInt(dst, v.Int(), 10), nil
}
