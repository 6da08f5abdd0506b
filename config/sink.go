package config

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
)

// sinkWhere names sink blocks in messages about per-iteration values.
const sinkWhere = "A sink block"

// decodeSinks is the last phase. Each sink type brings its own schema.
func (l *loader) decodeSinks(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		s := &Sink{Type: b.Labels[0], DeclRange: b.DefRange}
		spec, ok := l.opts.Sinks[s.Type]
		if !ok {
			known := make([]string, 0, len(l.opts.Sinks))
			for k := range l.opts.Sinks {
				known = append(known, k)
			}
			sort.Strings(known)
			diags = append(diags, errorDiag(b.LabelRanges[0], fmt.Sprintf("Unknown sink type %q", s.Type),
				"hload has no sink of type %q.%s Known sink types: %s.", s.Type, didYouMean(s.Type, known), quoteList(known)))
			continue
		}
		diags = append(diags, checkStatic(hcldec.Variables(b.Body, spec), sinkWhere)...)
		v, d := hcldec.Decode(b.Body, spec, l.static)
		diags = append(diags, d...)
		s.sensitive = sensitivePaths(v)
		s.Config = l.secrets.plain(v)
		l.test.Sinks = append(l.test.Sinks, s)
	}
	return diags
}
