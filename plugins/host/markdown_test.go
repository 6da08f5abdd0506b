package host

import "testing"

// TestDescriptionMarkdown: one row per attribute, in the schema's order,
// with its default as JSON in a code span, and a | in a description
// escaped so that it stays in its cell; an empty schema says so.
func TestDescriptionMarkdown(t *testing.T) {
	d := Description{Name: "kv", Version: "1.0.0",
		TargetSchema: []SchemaAttribute{
			{Name: "address", Type: "string", Required: true, Description: "host:port | a unix socket"},
			{Name: "tags", Type: "map(string)", Default: map[string]any{"a": "b"}},
		},
	}
	want := "Attributes of protocol `kv` 1.0.0, as `hload plugin describe kv --markdown` prints them.\n" +
		"\nA `target` block:\n\n" +
		"| Attribute | Type | Required | Default | Description |\n" +
		"|---|---|---|---|---|\n" +
		"| `address` | string | yes |  | host:port \\| a unix socket |\n" +
		"| `tags` | map(string) | no | `{\"a\":\"b\"}` |  |\n" +
		"\nA `request` block:\n\nno attributes.\n"
	if got := d.Markdown(); got != want {
		t.Errorf("Markdown() =\n%s\nwant\n%s", got, want)
	}
}
