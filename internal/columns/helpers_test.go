package columns

import "google.golang.org/protobuf/reflect/protoreflect"

func protoValue(v any) protoreflect.Value { return protoreflect.ValueOf(v) }
