package config

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// pluginWhere names plugin blocks in messages about per-iteration values.
const pluginWhere = "A plugin block"

// pluginSchema is the schema of a plugin block.
var pluginSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "source"}, {Name: "sha256"}},
}

// decodePlugins runs after locals and before the targets: the plugins'
// protocols bring the schemas that targets and requests are decoded with.
// It replaces l.opts.Protocols with the registry Options.Plugins returns,
// and records the names of declared plugins it left out.
func (l *loader) decodePlugins(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	byName := map[string]*Plugin{}
	for _, b := range blocks {
		p := &Plugin{Name: b.Labels[0], DeclRange: b.DefRange}
		if p.Name == "" {
			diags = append(diags, errorDiag(b.LabelRanges[0], "Empty plugin name",
				`A plugin needs a name, which becomes its protocol's name, such as plugin "mqtt".`))
			continue
		}
		if earlier, dup := byName[p.Name]; dup {
			diags = append(diags, duplicateDiag("plugin", p.Name, b.DefRange, earlier.DeclRange))
			continue
		}
		byName[p.Name] = p
		if _, builtin := l.opts.Protocols.Lookup(p.Name); builtin {
			diags = append(diags, errorDiag(b.LabelRanges[0], fmt.Sprintf("Plugin %q has a built-in protocol's name", p.Name),
				"A plugin's name becomes a protocol name, and %q is already hload's built-in protocol. Give the plugin another name; to run the built-in in its own process, set isolate = true in its target block.", p.Name))
			continue
		}
		content, d := b.Body.Content(pluginSchema)
		diags = append(diags, d...)
		ok := !d.HasErrors()
		if attr := content.Attributes["source"]; attr != nil {
			s, good, d := l.pluginString(attr)
			diags = append(diags, d...)
			switch {
			case good && s == nil:
				diags = append(diags, errorDiag(attr.Expr.Range(), "Plugin source is null",
					"source is the path of the plugin binary, and this one evaluates to null. Set a path, or leave the attribute out to search HLOAD_PLUGIN_PATH and ./plugins/ for hload-plugin-%s.", p.Name))
				good = false
			case good && *s == "":
				diags = append(diags, errorDiag(attr.Expr.Range(), "Empty plugin source",
					"source is the path of the plugin binary. Leave it out to search HLOAD_PLUGIN_PATH and ./plugins/ for hload-plugin-%s.", p.Name))
				good = false
			case good:
				p.Source = *s
			}
			ok = ok && good
		}
		if attr := content.Attributes["sha256"]; attr != nil {
			// null or "" leave the binary unpinned, so that a variable can
			// make the pin optional.
			s, good, d := l.pluginString(attr)
			diags = append(diags, d...)
			if good && s != nil && *s != "" {
				if _, err := hex.DecodeString(*s); err != nil || len(*s) != 64 {
					diags = append(diags, errorDiag(attr.Expr.Range(), "Invalid sha256",
						"sha256 is the plugin binary's SHA-256 sum as 64 hexadecimal digits, as sha256sum prints it, or \"\" or null for no pin; got %q.", *s))
					good = false
				}
				p.SHA256 = strings.ToLower(*s)
			}
			ok = ok && good
		}
		if ok {
			l.test.Plugins = append(l.test.Plugins, p)
		}
	}
	// Every declared name stays a plugin's, even when its block was bad, so
	// its targets are not reported again as using an unknown protocol.
	for name := range byName {
		l.plugins[name] = true
	}
	if len(l.test.Plugins) == 0 || diags.HasErrors() {
		// Nothing is started for a config that is already wrong.
		return diags
	}
	if l.opts.Plugins == nil {
		return append(diags, errorDiag(l.test.Plugins[0].DeclRange, "Plugins cannot be used here",
			"This caller of hload's config package does not start plugins, so plugin %q cannot be checked or run.", l.test.Plugins[0].Name))
	}
	reg, d := l.opts.Plugins(l.test.Plugins)
	diags = append(diags, d...)
	if reg != nil {
		l.opts.Protocols = reg
	}
	return diags
}

// pluginString evaluates a string attribute of a plugin block: nil when
// it is null, and good false when it is wrong, which is reported.
func (l *loader) pluginString(attr *hcl.Attribute) (s *string, good bool, diags hcl.Diagnostics) {
	v, diags := l.evalStatic(attr.Expr, pluginWhere)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return nil, false, diags
	}
	if v.IsNull() {
		return nil, true, diags
	}
	v, err := convert.Convert(v, cty.String)
	if err != nil {
		return nil, false, append(diags, typeDiag(attr, err))
	}
	str := v.AsString()
	return &str, true, diags
}

// isPlugin reports whether the protocol name was declared by a plugin
// block.
func (l *loader) isPlugin(name string) bool { return l.plugins[name] }
