package sql

import (
	gms "github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// pushdownRuleID names our analyzer rule (ids above the engine's own).
const pushdownRuleID analyzer.RuleId = 10_000

// newAnalyzer is the engine's analyzer plus one rule: after the engine has pushed each
// table's filters down to just above it, the rule hands the conjuncts on internal columns to
// the table (constraints.go) so its scan reads only what they can match. The Filter node
// stays: the engine still evaluates every condition, so the scan only has to narrow, never
// to be exact.
func newAnalyzer(p gms.DatabaseProvider) *analyzer.Analyzer {
	return analyzer.NewBuilder(p).AddPostAnalyzeRule(pushdownRuleID, pushdownConstraints).Build()
}

func pushdownConstraints(ctx *gms.Context, _ *analyzer.Analyzer, n gms.Node, _ *plan.Scope, _ analyzer.RuleSelector, _ *gms.QueryFlags) (gms.Node, transform.TreeIdentity, error) {
	return transform.Node(n, func(node gms.Node) (gms.Node, transform.TreeIdentity, error) {
		f, ok := node.(*plan.Filter)
		if !ok {
			return node, transform.SameTree, nil
		}
		child, same, err := narrow(ctx, f.Child, expression.SplitConjunction(f.Expression))
		if err != nil || same {
			return node, transform.SameTree, err
		}
		nf, err := f.WithChildren(child)
		return nf, transform.NewTree, err
	})
}

// narrow gives the topic table under n (directly or under an alias) the filters it can use.
func narrow(ctx *gms.Context, n gms.Node, filters []gms.Expression) (gms.Node, bool, error) {
	switch x := n.(type) {
	case *plan.TableAlias:
		c, same, err := narrow(ctx, x.Child, filters)
		if err != nil || same {
			return n, true, err
		}
		nn, err := x.WithChildren(c)
		return nn, false, err
	case *plan.ResolvedTable:
		t, ok := x.UnderlyingTable().(*table)
		if !ok {
			return n, true, nil
		}
		var usable []gms.Expression
		probe := openConstraints()
		for _, e := range filters {
			if probe.handle(ctx, e) {
				usable = append(usable, e)
			}
		}
		if len(usable) == 0 {
			return n, true, nil
		}
		nt, err := x.WithTable(t.withFilters(usable))
		return nt, false, err
	}
	return n, true, nil
}
