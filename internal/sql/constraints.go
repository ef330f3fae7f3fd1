package sql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/transform"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/magnetar-io/magnetar/internal/columns"
)

// Filter pushdown. An analyzer rule (analyzer.go) hands a table the conjuncts of the filter
// the engine placed above it; the table uses those that compare an internal column with a
// value fixed for the query (a literal, NOW() - INTERVAL ...):
//
//   - __publish_time__ ranges: each partition's scan starts and ends where a binary search
//     over publish times (O(log n) entry reads) puts the bounds, instead of scanning;
//   - __partition__ = / IN / ranges: other partitions are not opened;
//   - __message_id__ ranges, '(ledgerId,entryId,batchIndex)': the scan starts and ends at
//     those positions, compared in position order (not as strings).
//
// The engine still evaluates every filter; the scan applies these to each message as well,
// before decoding it, so skipped messages cost no decode. Publish times are set by producers,
// so across producers with skewed clocks they are not quite ordered; the search then finds a
// boundary as Pulsar's reset-by-time does, and a message published "out of order" just
// outside it is not seen (Pulsar SQL has the same property).

// msgID is a message id, ordered by ledger, entry and batch index (-1: not batched).
type msgID struct{ ledger, entry, batch int64 }

func (a msgID) cmp(b msgID) int {
	switch {
	case a.ledger != b.ledger:
		return cmpInt(a.ledger, b.ledger)
	case a.entry != b.entry:
		return cmpInt(a.entry, b.entry)
	}
	return cmpInt(a.batch, b.batch)
}

func cmpInt(a, b int64) int {
	if a < b {
		return -1
	}
	if a > b {
		return 1
	}
	return 0
}

func (a msgID) String() string { return fmt.Sprintf("(%d,%d,%d)", a.ledger, a.entry, a.batch) }

// parseMsgID reads "(ledgerId,entryId,batchIndex)" or "(ledgerId,entryId)".
func parseMsgID(s string) (msgID, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return msgID{}, false
	}
	parts := strings.Split(s[1:len(s)-1], ",")
	if len(parts) < 2 || len(parts) > 3 {
		return msgID{}, false
	}
	var n [3]int64
	n[2] = -1
	for i, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
		if err != nil {
			return msgID{}, false
		}
		n[i] = v
	}
	return msgID{n[0], n[1], n[2]}, true
}

// constraints are what the scan was narrowed to; every row is checked against them.
type constraints struct {
	// pubLo..pubHi bound publish times, in microseconds, inclusive.
	pubLo, pubHi int64
	// partitions, when not nil, are the only partitions read.
	partitions map[int32]bool
	// idLo..idHi bound message ids, inclusive when set.
	idLo, idHi       msgID
	hasIDLo, hasIDHi bool
	// empty: the filters contradict each other (or compare with NULL): no row matches.
	empty bool
}

func openConstraints() constraints {
	return constraints{pubLo: math.MinInt64, pubHi: math.MaxInt64}
}

func (c *constraints) pubBounded() bool { return c.pubLo != math.MinInt64 || c.pubHi != math.MaxInt64 }

// match tells whether a message satisfies every handled filter.
func (c *constraints) match(part int32, pubMs int64, id msgID) bool {
	us := pubMs * 1000
	if us < c.pubLo || us > c.pubHi {
		return false
	}
	if c.partitions != nil && !c.partitions[part] {
		return false
	}
	if c.hasIDLo && id.cmp(c.idLo) < 0 {
		return false
	}
	return !c.hasIDHi || id.cmp(c.idHi) <= 0
}

type cmpOp int

const (
	opEq cmpOp = iota
	opLt
	opLe
	opGt
	opGe
)

func (o cmpOp) flip() cmpOp {
	return [...]cmpOp{opEq, opGt, opGe, opLt, opLe}[o]
}

// handle records f in c if it is a filter the scan can apply; it reports whether it did.
func (c *constraints) handle(ctx *gms.Context, f gms.Expression) bool {
	switch e := f.(type) {
	case *expression.Equals:
		return c.compare(ctx, e.Left(), e.Right(), opEq)
	case *expression.LessThan:
		return c.compare(ctx, e.Left(), e.Right(), opLt)
	case *expression.LessThanOrEqual:
		return c.compare(ctx, e.Left(), e.Right(), opLe)
	case *expression.GreaterThan:
		return c.compare(ctx, e.Left(), e.Right(), opGt)
	case *expression.GreaterThanOrEqual:
		return c.compare(ctx, e.Left(), e.Right(), opGe)
	case *expression.Between:
		col := internalField(e.Val)
		if col == "" || !constant(e.Lower) || !constant(e.Upper) {
			return false
		}
		probe := *c
		if !probe.apply(ctx, col, e.Lower, opGe) || !probe.apply(ctx, col, e.Upper, opLe) {
			return false
		}
		*c = probe
		return true
	case *expression.InTuple:
		if internalField(e.Left()) != columns.ColPartition {
			return false
		}
		tuple, ok := e.Right().(expression.Tuple)
		if !ok {
			return false
		}
		set := map[int32]bool{}
		for _, v := range tuple {
			if !constant(v) {
				return false
			}
			p, null, ok := intValue(ctx, v)
			if !ok {
				return false
			}
			if !null {
				set[p] = true
			}
		}
		c.restrictPartitions(set)
		return true
	}
	return false
}

func (c *constraints) compare(ctx *gms.Context, l, r gms.Expression, op cmpOp) bool {
	if col := internalField(l); col != "" && constant(r) {
		return c.apply(ctx, col, r, op)
	}
	if col := internalField(r); col != "" && constant(l) {
		return c.apply(ctx, col, l, op.flip())
	}
	return false
}

// apply narrows c by "col op v".
func (c *constraints) apply(ctx *gms.Context, col string, v gms.Expression, op cmpOp) bool {
	switch col {
	case columns.ColPublishTime:
		val, err := v.Eval(ctx, nil)
		if err != nil {
			return false
		}
		if val == nil {
			c.empty = true
			return true
		}
		conv, _, err := datetime6.Convert(ctx, val)
		t, ok := conv.(time.Time)
		if err != nil || !ok {
			return false
		}
		us := t.UnixMicro()
		switch op {
		case opEq:
			c.pubLo, c.pubHi = max(c.pubLo, us), min(c.pubHi, us)
		case opLt:
			c.pubHi = min(c.pubHi, us-1)
		case opLe:
			c.pubHi = min(c.pubHi, us)
		case opGt:
			c.pubLo = max(c.pubLo, us+1)
		case opGe:
			c.pubLo = max(c.pubLo, us)
		}
		if c.pubLo > c.pubHi {
			c.empty = true
		}
		return true
	case columns.ColPartition:
		p, null, ok := intValue(ctx, v)
		if !ok {
			return false
		}
		if null {
			c.empty = true
			return true
		}
		switch op {
		case opEq:
			c.restrictPartitions(map[int32]bool{p: true})
		default:
			// Ranges of partitions: keep the candidates in range (partitions are small numbers).
			keep := map[int32]bool{}
			for q := int32(-1); q < maxPartitions; q++ {
				if (op == opLt && q < p) || (op == opLe && q <= p) || (op == opGt && q > p) || (op == opGe && q >= p) {
					keep[q] = true
				}
			}
			c.restrictPartitions(keep)
		}
		return true
	case columns.ColMessageID:
		val, err := v.Eval(ctx, nil)
		if err != nil {
			return false
		}
		if val == nil {
			c.empty = true
			return true
		}
		s, ok := val.(string)
		if !ok {
			return false
		}
		id, ok := parseMsgID(s)
		if !ok {
			return false
		}
		lo := func(x msgID) {
			if !c.hasIDLo || x.cmp(c.idLo) > 0 {
				c.idLo, c.hasIDLo = x, true
			}
		}
		hi := func(x msgID) {
			if !c.hasIDHi || x.cmp(c.idHi) < 0 {
				c.idHi, c.hasIDHi = x, true
			}
		}
		switch op {
		case opEq:
			lo(id)
			hi(id)
		case opLt:
			hi(msgID{id.ledger, id.entry, id.batch - 1})
		case opLe:
			hi(id)
		case opGt:
			lo(msgID{id.ledger, id.entry, id.batch + 1})
		case opGe:
			lo(id)
		}
		if c.hasIDLo && c.hasIDHi && c.idLo.cmp(c.idHi) > 0 {
			c.empty = true
		}
		return true
	}
	return false
}

// maxPartitions bounds partition numbers (Pulsar's maxNumPartitionsPerPartitionedTopic
// default is unbounded; partitions beyond this are never produced by range filters).
const maxPartitions = 1 << 16

func (c *constraints) restrictPartitions(set map[int32]bool) {
	if c.partitions == nil {
		c.partitions = set
	} else {
		for p := range c.partitions {
			if !set[p] {
				delete(c.partitions, p)
			}
		}
	}
	if len(c.partitions) == 0 {
		c.empty = true
	}
}

func intValue(ctx *gms.Context, e gms.Expression) (int32, bool, bool) {
	val, err := e.Eval(ctx, nil)
	if err != nil {
		return 0, false, false
	}
	if val == nil {
		return 0, true, true
	}
	conv, _, err := types.Int64.Convert(ctx, val)
	n, ok := conv.(int64)
	if err != nil || !ok || n < math.MinInt32 || n > math.MaxInt32 {
		return 0, false, false
	}
	return int32(n), false, true
}

// internalField returns the internal column a bare column reference names, or "".
func internalField(e gms.Expression) string {
	gf, ok := e.(*expression.GetField)
	if !ok {
		return ""
	}
	switch n := strings.ToLower(gf.Name()); n {
	case columns.ColPublishTime, columns.ColPartition, columns.ColMessageID:
		return n
	}
	return ""
}

// constant tells whether e has the same value for every row of the query.
func constant(e gms.Expression) bool {
	if !e.Resolved() {
		return false
	}
	fixed := true
	transform.InspectExpr(e, func(x gms.Expression) bool {
		switch x.(type) {
		case *expression.GetField, *expression.BindVar, gms.NonDeterministicExpression:
			fixed = false
			return true
		}
		if _, ok := x.(gms.Aggregation); ok {
			fixed = false
			return true
		}
		return false
	})
	return fixed
}
