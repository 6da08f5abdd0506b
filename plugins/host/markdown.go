package host

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Markdown is the description's attributes as Markdown tables, one for the
// target and one for the request, for a plugin's README: what `hload plugin
// describe NAME --markdown` prints, so that the docs are generated from the
// schemas and cannot drift from them.
func (d Description) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Attributes of protocol `%s` %s, as `hload plugin describe %s --markdown` prints them.\n", d.Name, d.Version, d.Name)
	attributeTable(&b, "target", d.TargetSchema)
	attributeTable(&b, "request", d.RequestSchema)
	return b.String()
}

func attributeTable(b *strings.Builder, block string, attrs []SchemaAttribute) {
	fmt.Fprintf(b, "\nA `%s` block:\n\n", block)
	if len(attrs) == 0 {
		b.WriteString("no attributes.\n")
		return
	}
	b.WriteString("| Attribute | Type | Required | Default | Description |\n")
	b.WriteString("|---|---|---|---|---|\n")
	for _, a := range attrs {
		required := "no"
		if a.Required {
			required = "yes"
		}
		def := ""
		if a.Default != nil {
			if j, err := json.Marshal(a.Default); err == nil {
				def = "`" + string(j) + "`"
			}
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", a.Name, cell(a.Type), required, cell(def), cell(a.Description))
	}
}

// cell escapes what would break a Markdown table's row.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
